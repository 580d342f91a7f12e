"""The generated fleet's vLLM metrics through the pipeline (the session `pipeline_home`: its
config carries the `gke-vllm` source of kind inference_metrics): the landed, staged and hourly
counters equal the ground truth per pod and day, exactly, across the planted engine restart;
the latency hours come from the same buckets."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import pytest

from fleetledger.publish import history_path

pytestmark = pytest.mark.warehouse

COUNTER_TRUTH = {
    "vllm:prompt_tokens_total": "prompt_tokens",
    "vllm:generation_tokens_total": "generation_tokens",
    "vllm:request_success_total": "requests",
}


@pytest.fixture(scope="module")
def con(pipeline_home: Path) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    # the day models are in the build's own file, not in the published snapshot
    c.execute(f"attach '{history_path(pipeline_home)}' as history (read_only)")
    return c


@pytest.fixture(scope="module")
def truth(pipeline_home: Path) -> list[dict]:
    return json.loads((pipeline_home / "ground_truth.json").read_text())["inference_days"]


def test_hourly_counters_equal_the_truth_per_pod_and_day(
    con: duckdb.DuckDBPyConnection, truth: list[dict]
) -> None:
    rows = con.execute(
        """
        select k8s_pod, strftime(to_timestamp(hour_epoch), '%Y-%m-%d') as day, metric,
               sum(increase), sum(resets)
        from history.intermediate.int_inference_counter_hours
        where metric in ('vllm:prompt_tokens_total', 'vllm:generation_tokens_total',
                         'vllm:request_success_total')
        group by 1, 2, 3
        """
    ).fetchall()
    got = {(pod, day, metric): (int(n), int(r)) for pod, day, metric, n, r in rows}
    # 3 days: two servers all along, the last one replaced by a rolling update on day 2
    assert len(truth) >= 6
    assert len(got) == 3 * len(truth)
    for row in truth:
        for metric, field in COUNTER_TRUTH.items():
            increase, resets = got[(row["pod"], row["day"], metric)]
            assert increase == row[field], (row["pod"], row["day"], metric)
            if metric != "vllm:request_success_total":  # one series per finished reason
                assert resets == row["restarts"], (row["pod"], row["day"], metric)
    assert sum(r["restarts"] for r in truth) == 1


def test_landed_samples_are_staged_and_the_latency_hours_cover_every_request(
    con: duckdb.DuckDBPyConnection, truth: list[dict]
) -> None:
    staged = con.execute(
        "select count(*), count(distinct k8s_pod), min(host) is not null "
        "from staging.stg_inference__samples"
    ).fetchone()
    assert staged is not None and staged[1] == len({r["pod"] for r in truth}) and staged[2]
    # every request is one TTFT observation: the +Inf bucket's hourly increases per pod and day
    rows = con.execute(
        """
        select k8s_pod, strftime(to_timestamp(hour_epoch), '%Y-%m-%d'), sum(observations),
               min(p50_seconds), max(p95_seconds)
        from history.intermediate.int_inference_latency_hours
        where histogram = 'vllm:time_to_first_token_seconds'
        group by 1, 2
        """
    ).fetchall()
    got = {(p, d): (int(n), lo, hi) for p, d, n, lo, hi in rows}
    for row in truth:
        n, p50_min, p95_max = got[(row["pod"], row["day"])]
        assert n == row["requests"]
        # the generator's TTFT shares: 35 % of requests by 0.1 s, 75 % by 0.25 s, 99.5 % by
        # 2.5 s: every busy hour's median is in (0.1, 0.25], its p95 at most 1.0 s (92-98 %
        # of requests by 0.5-1.0 s)
        assert 0.1 < p50_min <= 0.25 and p95_max <= 1.0
