"""The generator's vLLM metrics (fleetledger/generator/vllm_files.py) read back by the parser:
per pod and day, the counters' increases (restart rule, ingest/telemetry/vllm_histograms.py)
equal the ground truth, which the generator computes from its own increments. A 2-day fleet of
the default layout, only its GKE nodes' series: no pipeline, a few seconds."""

from __future__ import annotations

import math
from datetime import date
from pathlib import Path

import numpy as np
import polars as pl
import pytest

from fleetledger.generator import vllm_files as V
from fleetledger.generator.fleet import build_fleet
from fleetledger.generator.model import DAY
from fleetledger.generator.telemetry import node_series
from ingest.telemetry.vllm import read_inference
from ingest.telemetry.vllm_histograms import counter_increases, histogram_quantile

START = date(2026, 10, 2)


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[dict], object]:
    fleet = build_fleet(start=START, days=2, seed=1)
    series = {n.host: node_series(fleet, n) for n in fleet.nodes if n.provider == "gcp"}
    out = tmp_path_factory.mktemp("vllm")
    return out, V.write_vllm(fleet, series, out)[0], fleet


def _landed(out: Path) -> pl.DataFrame:
    parts = []
    for path in sorted(out.glob("*/*.prom.gz")):
        result = read_inference(
            path, source="gke-vllm", options={}, day=date.fromisoformat(path.parent.name)
        )
        assert result.quarantine.height == 0, result.quarantine
        parts.append(result.rows)
    return pl.concat(parts)


def test_counter_increases_per_pod_and_day_equal_the_truth(written: tuple) -> None:
    out, truth, _fleet = written
    inc = counter_increases(_landed(out)).with_columns(day=pl.col("time").dt.date().cast(pl.String))
    got = (
        inc.filter(pl.col("metric").is_in(list(V.COUNTERS_NAMES)))
        .group_by("pod", "day", "metric")
        .agg(pl.col("increase").sum())
    )
    by = {(p, d, m): int(v) for p, d, m, v in got.iter_rows()}
    assert len(truth) >= 3  # two servers, one replaced by a rolling update on day 2
    for row in truth:
        key = (row["pod"], row["day"])
        assert by[(*key, "vllm:prompt_tokens_total")] == row["prompt_tokens"]
        assert by[(*key, "vllm:generation_tokens_total")] == row["generation_tokens"]
        assert by[(*key, "vllm:request_success_total")] == row["requests"]
        # prompt tokens are PROMPT_TOKENS_PER_REQUEST per request (800)
        assert row["prompt_tokens"] == 800 * row["requests"]


def test_one_server_restarts_and_its_counters_fall_back(written: tuple) -> None:
    out, truth, fleet = written
    assert sum(r["restarts"] for r in truth) == 1
    restarted = next(r for r in truth if r["restarts"])
    # the restart is on day 2 (the first scrape at or after day 2 06:00 UTC)
    assert restarted["day"] == "2026-10-03"
    rows = (
        _landed(out)
        .filter(
            (pl.col("pod") == restarted["pod"])
            & (pl.col("metric") == "vllm:generation_tokens_total")
        )
        .sort("time")
    )
    values = rows.get_column("value").to_numpy()
    drops = np.flatnonzero(np.diff(values) < 0)
    assert drops.size == 1
    at = rows.item(int(drops[0]) + 1, "time").timestamp()
    assert fleet.t0 + V.RESTART_AFTER <= at < fleet.t0 + V.RESTART_AFTER + fleet.scrape_interval
    assert fleet.t0 + DAY <= at


def test_tokens_follow_utilisation_with_the_fixed_constant(written: tuple) -> None:
    out, truth, fleet = written
    # generation tokens of an interval = 600 tokens/GPU-s x the GPUs' summed utilisation x 60 s;
    # GKE's DCGM reports integer percent, so each interval is 360 x the summed percent
    rows = _landed(out).filter(pl.col("metric") == "vllm:generation_tokens_total")
    inc = counter_increases(rows).drop_nulls("increase")
    assert (inc.get_column("increase") % 360 == 0).all()
    assert fleet.scrape_interval == 60 and V.TOKENS_PER_GPU_SECOND == 600


def test_ttft_quantiles_of_a_day_follow_the_fixed_bucket_shares(written: tuple) -> None:
    out, truth, _fleet = written
    inc = counter_increases(
        _landed(out).filter(pl.col("metric") == "vllm:time_to_first_token_seconds_bucket")
    ).with_columns(day=pl.col("time").dt.date().cast(pl.String))
    days = inc.group_by("pod", "day", "le").agg(pl.col("increase").sum())
    for row in truth:
        got = days.filter((pl.col("pod") == row["pod"]) & (pl.col("day") == row["day"]))
        buckets = [
            (math.inf if le == "+Inf" else float(le), float(n))
            for le, n in got.select("le", "increase").iter_rows()
        ]
        # every request is one observation
        assert max(n for _, n in buckets) == row["requests"]
        # shares 10 / 35 / 75 / 92 / 98 / 99.5 % by 0.05 / 0.1 / 0.25 / 0.5 / 1 / 2.5 s:
        # p50 in (0.1, 0.25]: 0.1 + 0.15 x (0.50 - 0.35) / (0.75 - 0.35) = 0.15625;
        # p95 in (0.5, 1.0]: 0.5 + 0.5 x (0.95 - 0.92) / (0.98 - 0.92) = 0.75 (the floors of
        # each scrape's bucket counts move them by well under 1 ms)
        assert histogram_quantile(0.5, buckets) == pytest.approx(0.15625, abs=1e-3)
        assert histogram_quantile(0.95, buckets) == pytest.approx(0.75, abs=1e-3)
