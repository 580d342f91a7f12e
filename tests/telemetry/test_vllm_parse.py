"""vLLM metrics (kind inference_metrics): the parser on real exposition text, counter
increases across a restart, and quantiles from buckets (ingest/telemetry/vllm*.py).

The fixture tests/fixtures/vllm/vllm-scrapes.prom is three scrapes of one vLLM server, 60 s
apart from 2026-10-01T10:00:00Z (timestamps in ms, as /federate writes them), each with the
`# HELP`/`# TYPE` lines of every family; the third follows a restart: every counter, bucket,
`_sum` and `_count` is below the second scrape's.
"""

from __future__ import annotations

import json
import math
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest

from ingest.core.spec import KindOptions
from ingest.registry import spec_for
from ingest.telemetry.dcgm_prometheus import Chunk, query_url, read_prometheus_day
from ingest.telemetry.vllm import METRICS, VLLM_PULL, read_inference
from ingest.telemetry.vllm_histograms import histogram_quantile, hourly_increases

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "vllm"
SCRAPES = FIXTURES / "vllm-scrapes.prom"
BAD = FIXTURES / "vllm-bad-lines.prom"
T0 = datetime(2026, 10, 1, 10, 0, tzinfo=UTC)
INF = math.inf


def _scrapes() -> pl.DataFrame:
    result = read_inference(SCRAPES, source="vllm", options={}, day=date(2026, 10, 1))
    assert result.quarantine.height == 0
    return result.rows


def _hour_increase(rows: pl.DataFrame, metric: str, **labels: str) -> float:
    inc = hourly_increases(rows).filter(pl.col("metric") == metric)
    for k, v in labels.items():
        inc = inc.filter(pl.col(k) == v)
    assert inc.height == 1
    return float(inc.item(0, "increase"))


def _buckets(rows: pl.DataFrame, histogram: str) -> list[tuple[float, float]]:
    inc = hourly_increases(rows).filter(pl.col("metric") == f"{histogram}_bucket")
    return [
        (INF if le == "+Inf" else float(le), float(n))
        for le, n in inc.select("le", "increase").iter_rows()
    ]


def test_scrapes_land_every_vllm_sample_with_its_labels() -> None:
    rows = _scrapes()
    # 25 vllm: samples a scrape (prompt, its _created, generation, 2 finished reasons, TTFT
    # 5 buckets + _sum + _count, e2e 3 + 2, queue 3 + 2, 3 gauges) x 3 scrapes; the
    # python_gc_* line is not a vLLM metric and is skipped
    assert rows.height == 75
    assert rows.get_column("time").unique().sort().to_list() == [
        T0,
        T0.replace(minute=1),
        T0.replace(minute=2),
    ]
    assert rows.get_column("pod").unique().to_list() == ["vllm-0"]
    assert rows.get_column("namespace").unique().to_list() == ["inference"]
    assert rows.get_column("model_name").unique().to_list() == ["meta-llama/Llama-3.1-8B-Instruct"]
    assert json.loads(rows.item(0, "labels")) == {"instance": "10.4.0.7:8000", "job": "vllm"}
    ttft = rows.filter(pl.col("metric") == "vllm:time_to_first_token_seconds_bucket")
    assert sorted(set(ttft.get_column("le"))) == ["+Inf", "0.1", "0.25", "0.5", "1.0"]
    reasons = rows.filter(pl.col("metric") == "vllm:request_success_total")
    assert sorted(set(reasons.get_column("finished_reason"))) == ["length", "stop"]
    first = rows.filter((pl.col("time") == T0) & (pl.col("metric") == "vllm:kv_cache_usage_perc"))
    assert first.item(0, "value") == 0.12


def test_counter_increases_count_a_restart_as_its_new_value() -> None:
    rows = _scrapes()
    # the first scrape has no increase; then (scrape 2 - scrape 1) + scrape 3's own value
    # (a drop: the server restarted): prompt (1600 - 1000) + 200 = 800
    assert _hour_increase(rows, "vllm:prompt_tokens_total") == 800
    # generation (5900 - 5000) + 300 = 1200
    assert _hour_increase(rows, "vllm:generation_tokens_total") == 1200
    # stop (14 - 10) + 2 = 6; length (2 - 1) + 0 = 1
    assert _hour_increase(rows, "vllm:request_success_total", finished_reason="stop") == 6
    assert _hour_increase(rows, "vllm:request_success_total", finished_reason="length") == 1
    # the TTFT histogram's count: (16 - 11) + 2 = 7 = the 6 + 1 requests
    assert _hour_increase(rows, "vllm:time_to_first_token_seconds_count") == 7


def test_quantiles_from_bucket_increases_match_a_hand_computation() -> None:
    rows = _scrapes()
    ttft = _buckets(rows, "vllm:time_to_first_token_seconds")
    # bucket increases: le 0.1: (5-3)+1 = 3, 0.25: (12-7)+1 = 6, 0.5: (15-10)+2 = 7,
    # 1.0: (16-11)+2 = 7, +Inf: 7
    assert sorted(ttft) == [(0.1, 3), (0.25, 6), (0.5, 7), (1.0, 7), (INF, 7)]
    # p50: rank 3.5 in (0.1, 0.25] (3 below, 3 in it): 0.1 + 0.15 x 0.5/3 = 0.125
    assert histogram_quantile(0.5, ttft) == pytest.approx(0.125)
    # p95: rank 6.65 in (0.25, 0.5] (6 below, 1 in it): 0.25 + 0.25 x 0.65 = 0.4125
    assert histogram_quantile(0.95, ttft) == pytest.approx(0.4125)
    e2e = _buckets(rows, "vllm:e2e_request_latency_seconds")
    # le 1: (2-1)+1 = 2, 5: (10-4)+2 = 8, +Inf: (12-4)+2 = 10
    assert sorted(e2e) == [(1.0, 2), (5.0, 8), (INF, 10)]
    # p50: rank 5 in (1, 5]: 1 + 4 x 3/6 = 3.0; p95: rank 9.5 is past 8, in +Inf: the highest
    # finite bound, 5.0
    assert histogram_quantile(0.5, e2e) == pytest.approx(3.0)
    assert histogram_quantile(0.95, e2e) == 5.0
    queue = _buckets(rows, "vllm:request_queue_time_seconds")
    assert sorted(queue) == [(0.01, 8), (0.1, 10), (INF, 10)]
    # the lowest bucket starts at 0: p50 rank 5 of 8: 0.01 x 5/8 = 0.00625;
    # p95 rank 9.5 in (0.01, 0.1]: 0.01 + 0.09 x 1.5/2 = 0.0775
    assert histogram_quantile(0.5, queue) == pytest.approx(0.00625)
    assert histogram_quantile(0.95, queue) == pytest.approx(0.0775)
    assert histogram_quantile(0.5, [(1.0, 0), (INF, 0)]) is None


def test_bad_lines_are_quarantined_with_their_line_and_reason() -> None:
    result = read_inference(BAD, source="vllm", options={}, day=date(2026, 10, 1))
    assert result.rows.height == 1 and result.rows.item(0, "value") == 4
    q = {n: r for n, r in result.quarantine.select("x_line_number", "reason").iter_rows()}
    assert sorted(q) == [3, 4, 5, 6, 7, 8, 9]
    assert "is negative" in q[3]
    assert "outside the fraction range 0..1" in q[4]
    assert "without a numeric le label" in q[5] and "le=fast" in q[6]
    assert "neither a pod nor a host label" in q[7]
    assert q[8] == "unparseable sample line"
    assert "outside the file's day 2026-10-01" in q[9]
    raw = result.quarantine.filter(pl.col("x_line_number") == 3).item(0, "raw")
    assert raw.startswith("vllm:num_requests_waiting{") and raw.split()[1] == "-1"


def test_an_empty_scrape_is_a_gap_finding(tmp_path: Path) -> None:
    empty = tmp_path / "vllm.prom"
    empty.write_text("# HELP vllm:num_requests_running x\n# TYPE vllm:num_requests_running gauge\n")
    result = read_inference(empty, source="vllm", options={})
    assert result.rows.height == 0
    assert [w.check for w in result.warnings] == ["empty_file"]  # type: ignore[union-attr]


def _api_response(metric: str, start: datetime) -> bytes:
    t = start.timestamp()
    labels = {"__name__": metric, "model_name": "m", "namespace": "inference", "pod": "vllm-0"}
    if metric.endswith("_bucket"):
        labels["le"] = "+Inf"
    body = {
        "status": "success",
        "data": {
            "resultType": "matrix",
            # two samples in the chunk, one a minute before it (outside [a, b): dropped)
            "result": [
                {"metric": labels, "values": [[t - 60, "0.1"], [t, "0.5"], [t + 60, "0.7"]]}
            ],
        },
    }
    return json.dumps(body).encode()


def test_live_pull_asks_range_selectors_per_metric_and_chunk() -> None:
    day = date(2026, 10, 1)
    asked: list[str] = []

    def fetch(url: str) -> bytes:
        asked.append(url)
        metric = next(m for m in METRICS if f"query={m.replace(':', '%3A')}%5B" in url)
        return _api_response(metric, datetime(2026, 10, 1, tzinfo=UTC))

    result = read_prometheus_day(
        "http://prom:9090",
        day,
        source="vllm",
        options={"chunk_seconds": 43200},
        fetch=fetch,
        pull=VLLM_PULL,
    )
    # 15 series names (3 counters, 3 x 3 histogram series, 3 gauges) x 2 chunks of 12 h
    assert len(METRICS) == 15 and len(asked) == 30
    assert asked[0] == query_url(
        "http://prom:9090",
        Chunk(METRICS[0], datetime(2026, 10, 1, tzinfo=UTC), datetime(2026, 10, 1, 12, tzinfo=UTC)),
    )
    # every chunk answers the same 3 samples at day start - 60 s, + 0, + 60 s: only the two in
    # the first chunk [00:00, 12:00) are kept, once per metric; the second chunk drops all three
    assert result.rows.height == 15 * 2
    assert set(result.rows.get_column("pod")) == {"vllm-0"}
    assert result.rows.filter(pl.col("le").is_not_null()).height == 3 * 2


def test_kind_is_registered_with_its_options() -> None:
    spec = spec_for("inference_metrics")
    assert spec.table == "inference_samples" and spec.group == "telemetry"
    opts: KindOptions = spec.options
    assert (
        opts.problems("inference_metrics", {"format": "prometheus_text"}, "x/{date}/*.prom") == []
    )
    assert opts.problems("inference_metrics", {"max_power_w": 1}, "x") != []
    assert (
        opts.problems(
            "inference_metrics", {"format": "prometheus_api", "metrics": ["a"]}, "http://p"
        )
        == []
    )
