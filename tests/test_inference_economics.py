"""Inference unit economics and recommendations on the generated fleet (the session
`pipeline_home`: 3 days, so 72 accounted hours). fct_inference_daily equals the ground truth
per vLLM server and day (tokens, requests; cost from the truth's run cost); the recommendations
the demo fleet holds fire with savings computed here by hand from the truth and the generator's
rate card. The rules' other cases (right_size_mig, consolidate_replicas, and the no-waste rows
of every rule) are dbt unit tests on hand-made rows (models/intermediate/recommendations/
_int_recommendations__models.yml), run by tests/test_dbt_unit_tests.py."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from fleetledger.generator import model as M

pytestmark = pytest.mark.warehouse

WINDOW_HOURS = 72  # the fleet's 3 accounted days
HOURS_PER_MONTH = 730  # var recommendation_hours_per_month
OUTPUT_WEIGHT = 4  # var inference_output_token_weight
AWS_DISCOUNT = 0.28  # var commitment_discount_rates.aws


@pytest.fixture(scope="module")
def con(pipeline_home: Path) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    return c


@pytest.fixture(scope="module")
def truth(pipeline_home: Path) -> dict:
    return json.loads((pipeline_home / "ground_truth.json").read_text())


def test_inference_daily_equals_the_truth_per_server_and_day(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    rows = con.execute(
        """
        select run_id, model_name, strftime(day, '%Y-%m-%d'), requests, prompt_tokens,
               generation_tokens, gpu_hours, cost, cost_per_1m_tokens,
               cost_per_1m_prompt_tokens, cost_per_1m_generation_tokens, cost_per_1k_requests
        from main.fct_inference_daily
        """
    ).fetchall()
    got = {(r[0], r[1], r[2]): r[3:] for r in rows}
    days = truth["inference_days"]
    runs = {r["run_id"]: r for r in truth["runs"]}
    # 3 days: two servers all along, the last node's replaced on day 2 (7 server-days)
    assert len(days) == 7 and len(got) == len(days)
    for t in days:
        req, prompt, gen, gpu_hours, cost, per_1m, per_1m_in, per_1m_out, per_1k = got[
            (t["run_id"], t["model_name"], t["day"])
        ]
        assert (req, prompt, gen) == (t["requests"], t["prompt_tokens"], t["generation_tokens"])
        assert gpu_hours == pytest.approx(t["gpu_seconds"] / 3600, abs=1e-9)
        # GKE GPUs are billed at one flat hourly rate: the run's cost that day is its
        # GPU-seconds that day x (the truth's run cost / the run's GPU-seconds)
        run = runs[t["run_id"]]
        day_cost = t["gpu_seconds"] * run["cost"] / run["gpu_seconds"]
        assert cost == pytest.approx(day_cost, abs=1e-6)
        tokens = t["prompt_tokens"] + t["generation_tokens"]
        assert per_1m == pytest.approx(day_cost * 1e6 / tokens, rel=1e-9)
        # input / output: a generated token priced as 4 prompt tokens
        weighted = t["prompt_tokens"] + OUTPUT_WEIGHT * t["generation_tokens"]
        assert per_1m_in == pytest.approx(day_cost * 1e6 / weighted, rel=1e-9)
        assert per_1m_out == pytest.approx(OUTPUT_WEIGHT * day_cost * 1e6 / weighted, rel=1e-9)
        assert per_1k == pytest.approx(day_cost * 1e3 / t["requests"], rel=1e-9)
    # every server's days add up to the truth's run cost (shared idle excluded)
    for run_id in {t["run_id"] for t in days}:
        total = sum(v[4] for k, v in got.items() if k[0] == run_id)
        assert total == pytest.approx(runs[run_id]["cost"], abs=1e-6)


def _recommendations(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], tuple]:
    rows = con.execute(
        "select kind, subject, recommendation_id, team, owner, monthly_savings, confidence "
        "from main.fct_recommendations"
    ).fetchall()
    return {(r[0], r[1]): r[2:] for r in rows}


def test_the_demo_fleets_recommendations_and_their_savings(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    recs = _recommendations(con)
    notebook = truth["scenarios"]["idle_notebook"]["run_id"]
    idle_cost = {r["run_id"]: r for r in truth["runs"]}[notebook]["allocated_idle_cost"]
    # unallocated cost of the AWS pool (4 p5.48xlarge nodes of cluster aws-hpc)
    unallocated = [r for r in truth["idle_by_day_host_cause"] if r["cause"] == "unallocated"]
    aws_idle = sum(r["cost"] for r in unallocated if r["host"].startswith("aws-p5-"))
    assert set(recs) == {
        ("release_idle", notebook),
        ("commitment", "aws"),
        ("release_capacity", "aws:aws-hpc:p5.48xlarge"),
    }
    # release_idle: jupyter-alice idle all weekend on 4 GPUs (3 idle days): its allocated-idle
    # cost over the 72 h, x 730 / 72
    _, team, owner, savings, confidence = recs[("release_idle", notebook)]
    assert (team, owner, confidence) == ("research", "alice", "low")
    assert savings == pytest.approx(idle_cost * HOURS_PER_MONTH / WINDOW_HOURS, rel=1e-9)
    # commitment: 2 of the 4 p5 nodes have no Savings Plan (generator nodes.py): 16 GPUs on
    # demand every hour, at 98.32 / 8 = 12.29 a GPU-hour: 16 x 730 x 12.29 x 0.28 = 40,193.25
    _, team, _, savings, _ = recs[("commitment", "aws")]
    steady = 16 * HOURS_PER_MONTH * M.P5_ON_DEMAND_PER_HOUR / 8 * AWS_DISCOUNT
    assert steady == pytest.approx(40193.248)
    assert team is None and savings == pytest.approx(steady, rel=1e-9)
    # release_capacity: the AWS pool's unallocated cost over the 72 h, x 730 / 72
    _, team, _, savings, _ = recs[("release_capacity", "aws:aws-hpc:p5.48xlarge")]
    assert savings == pytest.approx(aws_idle * HOURS_PER_MONTH / WINDOW_HOURS, rel=1e-9)
    # the GKE pool is not flagged: its unallocated share is under 25 % (var
    # release_capacity_min_share) of its 2 x 8 x 72 GPU-hours
    gke_hours = sum(r["gpu_hours"] for r in unallocated if r["host"].startswith("gke-"))
    assert gke_hours < 0.25 * 2 * 8 * WINDOW_HOURS
    # ids are md5(kind:subject): the same from run to run
    for (kind, subject), (rec_id, *_rest) in recs.items():
        assert rec_id == hashlib.md5(f"{kind}:{subject}".encode()).hexdigest()
