"""The operations and spend marts equal the generator's ground truth
(fleetledger/generator/health_truth.py, computed from the fleet, not from the pipeline).

- fct_ops_daily: runs ended / completed, completion rate, infra vs user failures, pending GPU
  demand exactly; queue wait p50 / p95 within 1 s; MTTR = the outage's length;
- fct_team_gpu_hours_daily: allocated GPU-hours per team and day within 1 GPU-second;
- fct_daily_spend: sums to the bill per provider within $0.01; GPU-node spend by team equals the
  teams' run costs; tagged lines go to the tag's team;
- Slurm node events (`sacctmgr show event`): landed, parsed by their rules, re-landed closed.

Reuses the session's `pipeline_home` (no extra pipeline run).
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
from mart_rows import epoch as _epoch
from mart_rows import rows as _rows

from fleetledger.generator.scheduler_files import EVENT_FIELDS
from ingest.scheduler.slurm_events import parse_node_events

DBT_PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"


@pytest.fixture(scope="module")
def con(pipeline_home: Path) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    return c


# ------------------------------------------------------------------------------ operations


def test_ops_daily(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    got = {str(r["day"]): r for r in _rows(con, "select * from fct_ops_daily")}
    assert set(got) == {o["day"] for o in ground_truth["ops_daily"]}
    for exp in ground_truth["ops_daily"]:
        g = got[exp["day"]]
        for col in (
            "runs_ended",
            "runs_completed",
            "runs_failed_infra",
            "runs_failed_user",
            "runs_started",
            "runs_pending_at_day_end",
            "pending_gpus_at_day_end",
            "outages_ended",
        ):
            assert g[col] == exp[col], (exp["day"], col)
        assert g["runs_failed"] == exp["runs_failed_infra"] + exp["runs_failed_user"]
        assert g["completion_rate"] == pytest.approx(exp["completion_rate"], abs=1e-12)
        for col in ("queue_wait_p50_seconds", "queue_wait_p95_seconds"):
            assert abs(g[col] - exp[col]) <= 1, (exp["day"], col)
        if exp["mttr_seconds"] is None:
            assert g["mttr_seconds"] is None
        else:
            assert abs(g["mttr_seconds"] - exp["mttr_seconds"]) <= 1
    # the failures on the outage's day include its NODE_FAIL run
    o = ground_truth["scenarios"]["xid79_outage"]
    day = got[o["end"][:10]]
    assert day["outages_ended"] == 1
    assert day["mttr_seconds"] == _epoch(o["end"]) - _epoch(o["start"])
    assert got[o["start"][:10]]["runs_failed_infra"] >= 1


def test_team_gpu_hours_daily(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    got = {
        (str(r["day"]), r["team"]): r for r in _rows(con, "select * from fct_team_gpu_hours_daily")
    }
    exp = {(t["day"], t["team"]): t for t in ground_truth["team_gpu_hours_daily"]}
    assert set(got) == set(exp)
    for k, e in exp.items():
        assert abs(got[k]["allocated_gpu_hours"] - e["allocated_gpu_hours"]) <= 1 / 3600, k
        held = got[k]["busy_gpu_hours"] + got[k]["allocated_idle_gpu_hours"]
        assert held <= got[k]["allocated_gpu_hours"] + 1e-6, k


# ------------------------------------------------------------------------------ spend


def test_daily_spend_sums_to_bill_and_runs(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    per_provider = dict(
        con.execute("select provider, sum(cost) from fct_daily_spend group by 1").fetchall()
    )
    for provider, totals in ground_truth["bill_totals"].items():
        assert abs(per_provider[provider] - totals["effective_cost"]) <= 0.01, provider
    node = {
        (str(d), p): c
        for d, p, c in con.execute(
            "select day, provider, sum(gpu_node_cost) from fct_daily_spend group by 1, 2"
        ).fetchall()
    }
    for exp in ground_truth["gpu_node_cost_by_day_provider"]:
        assert abs(node[(exp["day"], exp["provider"])] - exp["cost"]) <= 0.01, exp
    # GPU-node spend of a team = its runs' direct cost; team null = idle (unallocated + down)
    team_cost: dict[str, float] = defaultdict(float)
    for r in ground_truth["runs"]:
        team_cost[r["team"]] += r["cost"]
    spend = dict(
        con.execute(
            "select team, sum(gpu_node_cost) from fct_daily_spend "
            "where team is not null group by 1 having sum(gpu_node_cost) <> 0"
        ).fetchall()
    )
    assert set(spend) == {t for t, c in team_cost.items() if c}
    for team, cost in team_cost.items():
        assert abs(spend.get(team, 0.0) - cost) <= 0.05, team
    idle = con.execute(
        "select sum(gpu_node_cost) from fct_daily_spend where team is null"
    ).fetchone()[0]
    exp_idle = sum(
        r["cost"] for r in ground_truth["idle_by_day_cause"] if r["cause"] != "allocated_idle"
    )
    assert abs(idle - exp_idle) <= 0.05
    # non-node lines: the storage tagged team=serving is serving's; untagged fees unattributed
    teams = dict(
        con.execute(
            "select service, string_agg(distinct coalesce(team, '-'), ',') from fct_daily_spend "
            "where gpu_node_cost = 0 group by 1"
        ).fetchall()
    )
    assert teams["Cloud Storage"] == "serving"
    assert teams["ComputeSavingsPlans"] == "unattributed"


# ------------------------------------------------------------------------------ node events


def test_node_events_landed(pipeline_home: Path, ground_truth: dict):
    o = ground_truth["scenarios"]["xid79_outage"]
    rows = duckdb.sql(
        f"select cluster, node, time_start, time_end, state, reason, x_source "
        f"from read_parquet('{pipeline_home}/raw/slurm_node_events/*/*/*.parquet')"
    ).fetchall()
    assert len(rows) == 1
    cluster, node, start, end, state, reason, source = rows[0]
    assert (cluster, node, state, source) == ("onprem", o["host"], "DOWN", "onprem-slurm")
    assert start.timestamp() == _epoch(o["start"]) and end.timestamp() == _epoch(o["end"])
    assert reason.startswith("XID 79")


def test_node_event_reader_rules():
    text = "\n".join(
        [
            EVENT_FIELDS,
            "dgx-01|2026-10-03T10:00:00|2026-10-03T11:00:00|DOWN*|Not responding",
            "dgx-02|2026-10-03T12:00:00|Unknown|IDLE+DRAIN|maintenance|ticket 42",
            "|2026-10-03T00:00:00|Unknown|UP|",  # a cluster event
            "dgx-03|yesterday|Unknown|DOWN|bad time",
            "dgx-04|2026-10-03T12:00:00",
            "dgx-05|2026-10-03T12:00:00|2026-10-03T11:00:00|DOWN|ends before it starts",
        ]
    )
    r = parse_node_events(text, source="s", file="f", options={"cluster": "c"})
    assert r.rows["node"].to_list() == ["dgx-01", "dgx-02", None]
    assert r.rows["reason"].to_list()[1] == "maintenance|ticket 42"  # Reason is last: kept whole
    assert r.rows["time_end"].to_list()[1] is None
    assert r.rows["time_start"].to_list()[0] == datetime(2026, 10, 3, 10, tzinfo=UTC)
    assert set(r.rows["cluster"].to_list()) == {"c"}
    assert r.quarantine["x_line_number"].to_list() == [5, 6, 7]
    tz = parse_node_events(
        "\n".join([EVENT_FIELDS, "n|2026-10-03T10:00:00|Unknown|DOWN|x"]),
        source="s",
        file="f",
        options={"timezone": "Europe/Berlin"},
    )
    assert tz.rows["time_start"].to_list()[0] == datetime(2026, 10, 3, 8, tzinfo=UTC)


def test_node_events_registry_relands_closed_outages(tmp_path: Path):
    """Events land by the day they start; an outage open when its day was landed is replaced
    by its closed row when a later day is ingested; rejected lines go to `<source>.events`."""
    from datetime import date

    import pyarrow.parquet as pq

    from fleetledger.config import Config
    from ingest.registry import ingest_source

    (tmp_path / "sacct").mkdir()
    for d in ("2026-11-02", "2026-11-03"):
        (tmp_path / "sacct" / f"sacct-{d}.txt").write_text("JobID|State\n")
    events = tmp_path / "sacct" / "events.txt"
    cfg = Config.model_validate(
        {
            "sources": [
                {
                    "name": "slurm",
                    "kind": "slurm",
                    "location": "sacct/sacct-{date}.txt",
                    "options": {"cluster": "c", "events": "sacct/events.txt"},
                }
            ],
            "base_dir": tmp_path,
        }
    )
    src = cfg.sources[0]
    home = tmp_path / "home"

    def landed() -> dict[str, list]:
        base = home / "raw" / "slurm_node_events" / "slurm"
        return {
            p.name: pq.read_table(p / "part-0.parquet").column("time_end").to_pylist()
            for p in sorted(base.iterdir())
            if not p.name.startswith(".")
        }

    events.write_text(f"{EVENT_FIELDS}\nn1|2026-11-02T22:00:00|Unknown|DOWN|XID 79\nbad\n")
    r1 = ingest_source(cfg, src, [date(2026, 11, 2)], home)
    assert r1.node_events_landed == 1 and r1.rows_quarantined == 1
    assert landed() == {"date=2026-11-02": [None]}
    assert (home / "raw" / "quarantine" / "slurm.events" / "date=2026-11-02").is_dir()
    events.write_text(
        f"{EVENT_FIELDS}\nn1|2026-11-02T22:00:00|2026-11-03T01:00:00|DOWN|XID 79\n"
        "n2|2026-11-03T05:00:00|2026-11-03T06:00:00|IDLE+DRAIN|maintenance\n"
    )
    r2 = ingest_source(cfg, src, [date(2026, 11, 3)], home)
    assert r2.node_events_landed == 2
    got = landed()
    assert got["date=2026-11-02"] == [datetime(2026, 11, 3, 1, tzinfo=UTC)]
    assert len(got["date=2026-11-03"]) == 1
