"""The notebooks' query functions (fleetledger/queries_idle.py, queries_energy.py,
queries_forecast.py) on hand-made mart rows, each figure computed by hand in a comment."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from fleetledger import queries as q
from fleetledger import queries_energy as qe
from fleetledger import queries_forecast as qf
from fleetledger import queries_idle as qi

MARTS = """
create table main.fct_idle_gpu_hours (day date, team varchar, host varchar, cause varchar,
    gpu_hours double, cost decimal(18, 6));
insert into main.fct_idle_gpu_hours values
    ('2026-10-02', null, 'a', 'unallocated', 10, 20),
    ('2026-10-02', 'ml', 'a', 'allocated_idle', 4, 8),
    ('2026-10-03', 'ml', 'b', 'allocated_idle', 1, 2),
    ('2026-10-03', null, 'b', 'down', 2, 5),
    ('2026-10-03', 'web', 'b', 'allocated_idle', 3, 9);
create table main.fct_runs (run_id varchar, user_name varchar, kind varchar, state varchar,
    started_at timestamp, ended_at timestamp, gpus integer, team varchar);
insert into main.fct_runs values
    ('r1', 'alice', 'interactive', 'RUNNING', '2026-10-02 17:00', null, 4, 'ml'),
    ('r2', 'bob', 'training', 'COMPLETED', '2026-10-02 00:00', '2026-10-03 00:00', 8, 'web'),
    ('r3', 'carol', 'batch', 'FAILED', '2026-10-03 00:00', '2026-10-03 01:00', 1, null);
create table main.fct_run_costs (run_id varchar, team varchar, gpu_hours double,
    allocated_idle_gpu_hours double, cost decimal(18, 6), allocated_idle_cost decimal(18, 6),
    energy_kwh double, energy_cost decimal(18, 6));
insert into main.fct_run_costs values
    ('r1', 'ml', 40, 5, 100, 10, 12.5, 3),
    ('r2', 'web', 192, 3, 600, 9, 100, null),
    ('r3', null, 1, 0, 0, 0, 0.25, null);
create table main.fct_gpu_hours (site varchar, provider varchar, busy_seconds double,
    allocated_idle_seconds double, unallocated_seconds double, down_seconds double,
    energy_wh double);
insert into main.fct_gpu_hours values
    ('dc1', 'onprem', 3000, 600, 0, 0, 500),
    ('dc1', 'onprem', 0, 0, 3600, 0, 100),
    ('us-east-2', 'aws', 3600, 0, 0, 0, 700);
create table main.fct_team_gpu_hours_daily (day date, team varchar, energy_kwh double,
    energy_cost decimal(18, 6));
insert into main.fct_team_gpu_hours_daily values
    ('2026-10-02', 'ml', 10, 2), ('2026-10-03', 'ml', 2.5, 1), ('2026-10-02', 'web', 100, null);
create table main.fct_forecast (series varchar, scope varchar, day date, yhat double,
    model varchar, trained_through date, insufficient_history boolean, backtest_error double,
    backtest_coverage_80 double, backtest_coverage_95 double);
insert into main.fct_forecast values
    ('spend', 'total', '2026-10-03', 10, 'ets', '2026-10-04', false, 0.1, 0.8, 0.9),
    ('spend', 'total', '2026-10-04', 11, 'ets', '2026-10-04', false, 0.1, 0.8, 0.9),
    ('spend', 'total', '2026-10-05', 12, 'ets', '2026-10-04', false, 0.1, 0.8, 0.9),
    ('spend', 'total', '2026-10-06', 13, 'ets', '2026-10-04', false, 0.1, 0.8, 0.9),
    ('spend', 'team:ml', '2026-10-05', 5, 'naive', '2026-10-04', true, null, null, null);
create table main.fct_capacity (scope varchar, day date, fleet_gpus integer,
    peak_gpus_demand double, peak_gpus_hi_80 double, runway_day date);
insert into main.fct_capacity values
    ('total', '2026-10-04', 16, 10, 10, '2026-10-06'),
    ('total', '2026-10-05', 16, 12, 15, '2026-10-06'),
    ('total', '2026-10-06', 16, 14, 18, '2026-10-06'),
    ('site:dc1', '2026-10-05', 8, 3, 4, null);
"""


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("analysis_marts") / "warehouse.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute(MARTS)
    return path


def test_idle_by_team(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        df = qi.idle_by_team(con)
    got = {(r.team, r.cause): (r.gpu_hours, r.cost) for r in df.itertuples()}
    # ml allocated_idle: 4 + 1 GPU-hours, 8 + 2 cost; nobody: unallocated 10/20, down 2/5
    assert got == {
        ("(nobody)", "unallocated"): (10, 20),
        ("ml", "allocated_idle"): (5, 10),
        ("web", "allocated_idle"): (3, 9),
        ("(nobody)", "down"): (2, 5),
    }
    assert df["team"].tolist()[0] == "(nobody)"  # most expensive first: 20


def test_idle_by_host_day(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        df = qi.idle_by_host_day(con)
    # host b on 10-03: allocated_idle 1 + 3 = 4 GPU-hours, 2 + 9 = 11 cost
    row = df[(df["host"] == "b") & (df["cause"] == "allocated_idle")].iloc[0]
    assert (row["day"], row["gpu_hours"], row["cost"]) == (pd.Timestamp("2026-10-03"), 4, 11)
    assert len(df) == 4


def test_longest_idle_allocations_binds_its_filters(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        every = qi.longest_idle_allocations(con)
        over_4 = qi.longest_idle_allocations(con, min_idle_gpu_hours=4)
        top1 = qi.longest_idle_allocations(con, limit=1)
    # r1 held 5 idle GPU-hours, r2 3, r3 0 (not > 0): r1 then r2
    assert every["run_id"].tolist() == ["r1", "r2"]
    assert every["user_name"].tolist() == ["alice", "bob"]
    # idle_share: r1 10 / 100 = 0.1; r2 9 / 600 = 0.015
    assert every["idle_share"].tolist() == pytest.approx([0.1, 0.015])
    assert over_4["run_id"].tolist() == ["r1"]
    assert top1["run_id"].tolist() == ["r1"]


def test_energy_by_team(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        df = qe.energy_by_team(con).set_index("team")
    # web 100 kWh (no energy cost: cloud), ml 12.5 kWh costing 3, r3 has no team: (none)
    assert df.index.tolist() == ["web", "ml", "(none)"]
    assert df.loc["ml", "energy_kwh"] == 12.5 and df.loc["ml", "energy_cost"] == 3
    assert pd.isna(df.loc["web", "energy_cost"])
    assert df.loc["(none)", "runs"] == 1


def test_team_energy_daily_and_site_energy(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        daily = qe.team_energy_daily(con)
        sites = qe.gpu_energy_by_site(con).set_index("site")
    assert daily.groupby("team")["energy_kwh"].sum().to_dict() == {"ml": 12.5, "web": 100}
    # dc1: 2 GPU-hours (3600 s each), (500 + 100) Wh = 0.6 kWh; us-east-2: 1 GPU-hour, 0.7 kWh
    assert sites.loc["dc1", "gpu_hours"] == 2 and sites.loc["dc1", "energy_kwh"] == 0.6
    assert sites.loc["us-east-2", "energy_kwh"] == pytest.approx(0.7)


def test_forecast_models_and_series(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        models = qf.forecast_models(con).set_index("scope")
        total = qf.forecast_series(con, "spend", "total")
        injected = qf.forecast_series(con, "spend", "total' or '1'='1")
    # total: days 10-03..10-06, trained through 10-04 -> 2 horizon days (10-05, 10-06)
    assert models.loc["total", "horizon_days"] == 2
    assert models.loc["total", "first_day"] == pd.Timestamp("2026-10-03")
    assert bool(models.loc["team:ml", "insufficient_history"]) is True
    assert total["day"].tolist() == [date(2026, 10, d) for d in (3, 4, 5, 6)]
    assert total["yhat"].tolist() == [10, 11, 12, 13]
    assert injected.empty  # the scope is a bound parameter, never SQL


def test_capacity_and_runway(warehouse: Path) -> None:
    with q.connect(warehouse) as con:
        cap = qf.capacity(con)
        runway = qf.runway(con).set_index("scope")
        present = q.available_marts(con)
    assert set(qf.FORECAST_MARTS) <= present
    assert len(cap) == 4
    # total: 16 GPUs, demand up to 14, its 80 % bound up to 18 -> runway 10-06
    assert runway.loc["total"].tolist()[:3] == [16, 14, 18]
    assert runway.loc["total", "runway_day"] == pd.Timestamp("2026-10-06")
    assert pd.isna(runway.loc["site:dc1", "runway_day"])
