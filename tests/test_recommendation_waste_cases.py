"""The recommendations only a generated case can prove, on the second shared fleet
(`mig_pipeline_home`: 2 days, so 48 accounted hours; generator waste_runs.py): right_size_mig
fires on exactly the notebook pod that holds a whole H100 at 12 % utilisation and 5-7 GB of
memory, consolidate_replicas on exactly the two 1-GPU Llama-3.1-8B servers; their savings are
computed here by hand from the ground truth (run costs, the vLLM pods' hourly tokens). The
first fleet plants no such case and neither fires there (tests/test_inference_economics.py)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import duckdb
import numpy as np
import pytest

pytestmark = pytest.mark.warehouse

WINDOW_HOURS = 48  # the fleet's 2 accounted days
HOURS_PER_MONTH = 730  # var recommendation_hours_per_month
MIG_TOTAL_SLICES = 7  # var mig_total_slices
TTFT_SLO_S = 1.0  # var inference_ttft_slo_seconds
COLUMNS = (
    "subject, team, owner, action, evidence, days_observed, p95_utilization, p95_memory_gb, "
    "gpu_hours, window_cost, window_savings, monthly_savings"
)


@pytest.fixture(scope="module")
def con(mig_pipeline_home: Path) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect(str(mig_pipeline_home / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    return c


@pytest.fixture(scope="module")
def truth(mig_pipeline_home: Path) -> dict:
    return json.loads((mig_pipeline_home / "ground_truth.json").read_text())


def _recommendations(con: duckdb.DuckDBPyConnection, kind: str) -> dict[str, tuple]:
    rows = con.execute(
        f"select {COLUMNS} from main.fct_recommendations where kind = ?", [kind]
    ).fetchall()
    return {r[0]: r[1:] for r in rows}


def test_right_size_mig_fires_on_the_planted_notebook(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    case = truth["scenarios"]["right_size_mig"]
    run = {r["run_id"]: r for r in truth["runs"]}[case["run_id"]]
    recs = _recommendations(con, "right_size_mig")
    assert set(recs) == {case["run_id"]}  # nothing else on the fleet fits a MIG instance
    team, owner, action, evidence, days, p95_util, p95_mem, gpu_hours, cost, window, monthly = recs[
        case["run_id"]
    ]
    assert (team, owner, days) == ("research", "tmoreau", 2)
    # its GPU reports 5,000-7,000 MiB: p95 of the hourly highest is under 7000 / 1024 = 6.84 GB,
    # x 1.2 headroom = 8.2 GB at most: the smallest profile of at least that is 1g.10gb (1/7)
    lo, hi = case["memory_mib"]
    assert lo / 1024 < p95_mem < hi / 1024 and p95_mem * 1.2 <= 10
    assert action == "move to MIG 1g.10gb (1/7 of a H100)"
    # 12 % utilisation: the p95 of hourly means of 60 samples (sd 0.04 / sqrt(60) = 0.005) is
    # about 0.12 + 1.645 x 0.005 = 0.128, under 0.12 + 3 sd and the 15 % limit
    assert case["utilization"] < p95_util < case["utilization"] + 0.015 < 0.15
    assert evidence == (
        f"p95 memory {round(p95_mem, 2)} GB, p95 utilisation {round(p95_util, 3)} on whole GPUs"
    )
    # its whole GPU for its life, at the truth's direct cost
    assert gpu_hours == pytest.approx(run["gpu_seconds"] / 3600, abs=1e-9)
    assert cost == pytest.approx(run["cost"], abs=1e-6)
    # savings: cost x (7 - 1) / 7 over the window; x 730 / 48 a month
    assert window == pytest.approx(run["cost"] * 6 / MIG_TOTAL_SLICES, rel=1e-9)
    expected = run["cost"] * 6 / MIG_TOTAL_SLICES * HOURS_PER_MONTH / WINDOW_HOURS
    assert monthly == pytest.approx(expected, rel=1e-9)


def test_consolidate_replicas_fires_on_the_planted_service(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    case = truth["scenarios"]["consolidate_replicas"]
    model = case["model_name"]
    runs = {r["run_id"]: r for r in truth["runs"]}
    recs = _recommendations(con, "consolidate_replicas")
    # the Llama-3.1-70B servers (4 GPUs each, one at a time) are not flagged
    assert set(recs) == {model}
    team, owner, action, evidence, days, _, _, gpu_hours, cost, window, monthly = recs[model]
    # a service has no user: the owner is the team's (config `teams:`)
    assert (team, owner, days) == ("serving", '["sre-serving"]', 2)
    hours = [h for h in truth["inference_hours"] if h["model_name"] == model]
    assert {h["run_id"] for h in hours} == set(case["run_ids"]) and len(case["run_ids"]) == 2
    # the service's tokens/s per hour, both replicas together; its p95 (linear interpolation,
    # as percentile_cont): about 2 x 0.3 x 600 x 4.2 = 1512 (a request's 800 prompt tokens per
    # 250 generated: 4.2 tokens per generated one; ~38 of ~47 hours have both servers up, the
    # top 2 are the load test's)
    per_hour: dict[str, list[float]] = {}
    for h in hours:
        per_hour.setdefault(h["hour"], [0.0, 0.0])
        per_hour[h["hour"]][0] += (h["prompt_tokens"] + h["generation_tokens"]) / 3600
        per_hour[h["hour"]][1] += h["gpu_seconds"] / 3600
    p95 = float(np.percentile([v[0] for v in per_hour.values()], 95))
    # the best hour of one replica per GPU: the load test at 90 %, about 0.9 x 600 x 4.2 = 2268
    best = max(
        (h["prompt_tokens"] + h["generation_tokens"]) / h["gpu_seconds"]
        for h in hours
        if h["gpu_seconds"] > 0
    )
    held = math.ceil(max(v[1] for v in per_hour.values()) - 1e-6)
    needed = math.ceil(p95 / best - 1e-6)
    assert (held, needed) == (2, 1)
    assert 1400 < p95 < 1650 and 2150 < best < 2400
    assert action == "serve on 1 GPUs instead of 2"
    got = re.fullmatch(
        r"2 replicas; p95 ([\d.]+) tokens/s, best ([\d.]+) tokens/s per GPU; "
        r"worst TTFT p95 ([\d.]+) s",
        evidence,
    )
    assert got is not None, evidence
    assert float(got[1]) == pytest.approx(p95, abs=0.051)
    assert float(got[2]) == pytest.approx(best, abs=0.051)
    assert float(got[3]) <= TTFT_SLO_S
    # both replicas' GPU-hours and direct cost, GKE's flat rate per GPU-hour
    truth_hours = sum(runs[r]["gpu_seconds"] for r in case["run_ids"]) / 3600
    truth_cost = sum(runs[r]["cost"] for r in case["run_ids"])
    assert gpu_hours == pytest.approx(truth_hours, abs=1e-9)
    assert cost == pytest.approx(truth_cost, abs=1e-6)
    # savings: the 1 GPU it could release x the cost per GPU-hour, x 48 h / x 730 h a month
    rate = truth_cost / truth_hours
    assert window == pytest.approx((held - needed) * rate * WINDOW_HOURS, rel=1e-9)
    assert monthly == pytest.approx((held - needed) * rate * HOURS_PER_MONTH, rel=1e-9)
