"""Work lost by failed runs (`fct_run_costs.lost_work_cost`) equals the generator's ground truth:
the cost of each failed run's GPU-seconds since its last checkpoint marker in its job log (the
whole run without one), computed second by second in fleetledger/generator/truth.py.

Run for both generated fleets (the 3-day default fleet and the MIG fleet of another seed)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest


@pytest.fixture(scope="module")
def con(fleet_home: Path) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect(str(fleet_home / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    return c


@pytest.fixture(scope="module")
def truth(fleet_home: Path) -> dict:
    return json.loads((fleet_home / "ground_truth.json").read_text())


def _iso(ts: datetime | None) -> str | None:
    return None if ts is None else ts.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _run_costs(con: duckdb.DuckDBPyConnection) -> dict[str, dict]:
    cur = con.execute(
        """
        select c.run_id, c.cost, c.lost_work_cost, c.last_checkpoint_at, c.lost_work_seconds,
               c.checkpoints, r.failure_class, r.state, r.scheduler,
               epoch(r.ended_at) - epoch(r.started_at) as elapsed
        from fct_run_costs c join fct_runs r using (run_id)
        """
    )
    cols = [d[0] for d in cur.description]
    return {row[0]: dict(zip(cols, row, strict=True)) for row in cur.fetchall()}


def test_every_runs_lost_work_and_last_checkpoint(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    got = _run_costs(con)
    assert len(got) == len(truth["runs"])
    for exp in truth["runs"]:
        g = got[exp["run_id"]]
        assert abs(g["lost_work_cost"] - exp["lost_work_cost"]) <= 0.01, exp["run_id"]
        assert _iso(g["last_checkpoint_at"]) == exp["last_checkpoint_at"], exp["run_id"]
        assert abs(g["lost_work_seconds"] - exp["lost_work_seconds"]) <= 0.001, exp["run_id"]
        if exp["failure_class"] is None:
            assert g["lost_work_cost"] == 0 and g["lost_work_seconds"] == 0


def test_the_comparison_is_not_vacuous(truth: dict) -> None:
    """Both fleets have failed runs with and without a checkpoint, and checkpointed runs of
    both schedulers."""
    failed = [r for r in truth["runs"] if r["failure_class"]]
    assert any(r["last_checkpoint_at"] for r in failed)
    assert any(not r["last_checkpoint_at"] for r in failed)
    checkpointed = {r["scheduler"] for r in truth["runs"] if r["last_checkpoint_at"]}
    assert checkpointed == {"slurm", "kubernetes"}
    assert any(r["last_checkpoint_at"] and r["lost_work_cost"] < r["cost"] - 1 for r in failed), (
        "a checkpoint must save real money somewhere"
    )


def test_every_marker_landed_and_none_quarantined(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    n = con.execute("select count(*) from staging.stg_run_logs__checkpoints").fetchone()
    assert n is not None and n[0] == truth["checkpoint_markers"]
    q = con.execute(
        "select count(*) from staging.stg_quarantine__rows where quarantine_source like '%-logs'"
    ).fetchone()
    assert q == (0,)


def test_node_fail_run_loses_only_the_work_since_its_last_checkpoint(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    """moe-ablation-3 dies with NODE_FAIL when dgx-03 falls off the bus (XID 79): it had
    checkpointed, so it loses the minutes since then, not its whole cost."""
    sc = truth["scenarios"]["checkpointed_failure"]
    assert sc["run_id"] == truth["scenarios"]["xid79_outage"]["failed_run_id"]
    g = _run_costs(con)[sc["run_id"]]
    assert (g["state"], g["failure_class"]) == ("NODE_FAIL", "infra")
    assert _iso(g["last_checkpoint_at"]) == sc["last_checkpoint_at"]
    ended = datetime.fromisoformat(sc["ended_at"].replace("Z", "+00:00"))
    assert g["last_checkpoint_at"] < ended
    assert g["checkpoints"] > 1
    assert abs(g["lost_work_seconds"] - sc["lost_work_seconds"]) <= 0.001
    assert 0 < sc["lost_work_seconds"] < 40 * 60  # checkpoints come every 25-40 minutes
    assert abs(g["lost_work_cost"] - sc["lost_work_cost"]) <= 0.01
    assert abs(g["cost"] - sc["cost"]) <= 0.01
    assert 0 < g["lost_work_cost"] < g["cost"]
    # the lost share of the cost is the lost share of its time (two whole nodes, none down)
    share = g["lost_work_cost"] / g["cost"]
    assert abs(share - g["lost_work_seconds"] / g["elapsed"]) < 0.01


def test_failures_without_a_marker_lose_their_whole_cost(
    con: duckdb.DuckDBPyConnection, truth: dict
) -> None:
    """The preempted ppo-sweep-base attempt 1 and the FAILED eval-harness logged, but never
    checkpointed. Attempt 2 of ppo-sweep-base appended its own markers to the same file: they
    are outside attempt 1's window and count for attempt 2 only."""
    got = _run_costs(con)
    ids = truth["scenarios"]["failures_without_checkpoint"]["run_ids"]
    assert len(ids) == 2
    for run_id in ids:
        g = got[run_id]
        assert g["failure_class"] is not None and g["last_checkpoint_at"] is None
        assert g["lost_work_cost"] == pytest.approx(g["cost"], abs=0.01) and g["cost"] > 1
        assert g["lost_work_seconds"] == g["elapsed"]
    preempted = next(r for r in ids if got[r]["state"] == "PREEMPTED")
    attempt2 = preempted[: -len(":1")] + ":2"
    assert got[attempt2]["state"] == "COMPLETED" and got[attempt2]["checkpoints"] > 0
    assert got[attempt2]["lost_work_cost"] == 0
