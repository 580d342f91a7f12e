"""fct_forecast and fct_capacity in the published warehouse of the shared 3-day fleet
(`pipeline_home`, tests/conftest.py): every scope the fleet's marts hold, one row per grain."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb

from fleetledger.config import load_config
from fleetledger.config_forecast import ForecastSettings
from fleetledger.forecasting.forecast import horizon_days


def _set(con: duckdb.DuckDBPyConnection, sql: str) -> set[str]:
    return {r[0] for r in con.execute(sql).fetchall()}


def test_forecast_marts_are_published_with_every_scope(pipeline_home: Path) -> None:
    cfg = load_config(pipeline_home / "fleetledger.yml")
    con = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    try:
        spend = _set(con, "select 'total'") | _set(
            con,
            "select 'team:' || team from fct_daily_spend where team is not null "
            "group by team having sum(abs(cost)) > 0 "
            "union select 'provider:' || provider from fct_daily_spend "
            "union select 'service:' || service from fct_daily_spend "
            "union select 'sub_account:' || sub_account from fct_sub_account_daily_spend "
            "where sub_account is not null",
        )
        spend |= {f"team:{b.scope.team}" for b in cfg.budgets if b.scope.team}
        spend |= {f"team:{b.scope.team}+shared_idle" for b in cfg.budgets if b.include_shared_idle}
        gpu_hours = {"total"} | _set(
            con, "select distinct 'team:' || team from fct_team_gpu_hours_daily"
        )
        sites = _set(con, "select distinct 'site:' || site from dim_gpus")
        expected = (
            {("spend", s) for s in spend}
            | {("gpu_hours", s) for s in gpu_hours}
            | {("peak_gpus", s) for s in {"total", *sites}}
        )
        got = set(con.execute("select distinct series, scope from fct_forecast").fetchall())
        assert got == expected
        grain = con.execute(
            "select count(*), count(distinct (series, scope, day)) from fct_forecast"
        ).fetchall()[0]
        assert grain[0] == grain[1]
        last = con.execute("select max(day) from fct_ops_daily").fetchall()[0][0]
        h = horizon_days(last, ForecastSettings())
        # every series: the horizon's days trained through the last day; spend series also
        # the last actual days (3 here: fewer than anomaly_lookback_days), trained the day before
        future = con.execute(
            "select series, scope, count(*), min(day), max(day), min(trained_through), "
            "max(trained_through) from fct_forecast where horizon > 0 group by all"
        ).fetchall()
        for _series, _scope, n, first, end, t0, t1 in future:
            assert (n, first, end, t0, t1) == (
                h,
                last + timedelta(1),
                last + timedelta(h),
                last,
                last,
            )
        past = con.execute(
            "select series, count(*), bool_and(trained_through = day - 1), "
            "bool_and(actual is not null) from fct_forecast where horizon <= 0 group by series"
        ).fetchall()
        # a 3-day fleet: each spend series has 2 days with a day before them
        n_spend = len(spend)
        assert past == [("spend", 2 * n_spend, True, True)]
        # 3 days of history: all short
        assert _set(con, "select distinct model from fct_forecast") <= {"FlatMean"}
        cap = con.execute(
            "select scope, count(*), count(distinct day), max(fleet_gpus) from fct_capacity "
            "group by scope"
        ).fetchall()
        gpus = dict(con.execute("select site, count(*) from dim_gpus group by site").fetchall())
        assert {r[0] for r in cap} == {"total", *sites}
        for scope, n, days, fleet in cap:
            assert n == days == 3 + h
            want = sum(gpus.values()) if scope == "total" else gpus[scope.removeprefix("site:")]
            assert fleet == want
    finally:
        con.close()


def test_forecast_command_prints_the_marts_headline(pipeline_home: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    from fleetledger.cli import main

    con = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    try:
        cum30, lo30, hi30 = con.execute(
            "select cum_yhat, cum_lo_80, cum_hi_80 from fct_forecast "
            "where series = 'spend' and scope = 'total' and horizon = 30"
        ).fetchall()[0]
        runway = con.execute("select max(runway_day) from fct_capacity where scope = 'total'")
        total_runway = runway.fetchall()[0][0]
    finally:
        con.close()
    assert main(["forecast", "--home", str(pipeline_home)]) == 0
    text = capsys.readouterr().out
    assert f"{cum30:,.0f} USD" in text
    assert f"{lo30:,.0f} – {hi30:,.0f}" in text
    assert "GPU-hours (held)" in text and "90 days" in text
    assert (str(total_runway) if total_runway else "beyond") in text
