"""The query layer: every figure the CLI headlines, the app and the notebooks show, one function
each, over the marts in schema `main` of a warehouse (the published, read-only snapshot).

Each function takes an open DuckDB connection, binds its filters as parameters and returns a
pandas DataFrame; it reads marts only (no business logic: that lives in the dbt models). The app
caches these per snapshot (app/queries.py); `connect` opens a snapshot read-only, in UTC.
The explorer's pages add their figures in sibling modules of this one query layer:
`queries_spend` (cost explorer, period comparison, budgets and alerts), `queries_runs` (runs
and a run's page) and `queries_fleet` (idle, health, energy, forecasts, data health).

Days are UTC calendar days (`cast(ts as date)` with the session time zone set to UTC).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

Con = duckdb.DuckDBPyConnection
IDLE_CAUSES: tuple[str, ...] = ("unallocated", "allocated_idle", "down")


@contextmanager
def connect(warehouse: str | Path) -> Iterator[Con]:
    """A read-only connection to a warehouse file, session time zone UTC."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        yield con
    finally:
        con.close()


def _query(con: Con, sql: str, params: tuple[Any, ...] = ()) -> pd.DataFrame:
    return con.execute(sql, list(params)).df()


# --------------------------------------------------------------------------- filters


# (mart, the expression whose UTC day dates a row): what the date-range filter spans
_DATED_MARTS: tuple[tuple[str, str], ...] = (
    ("fct_billing", "ChargePeriodStart"),
    ("fct_gpu_hours", "hour"),
    ("fct_idle_gpu_hours", "day"),
    ("fct_pue_daily", "day"),
)


def available_marts(con: Con) -> set[str]:
    """Names of the tables and views in schema `main` of the snapshot."""
    df = _query(
        con,
        """
        select table_name as name from duckdb_tables() where schema_name = 'main'
        union
        select view_name from duckdb_views() where schema_name = 'main' and not internal
        """,
    )
    return set(df["name"])


def date_bounds(con: Con) -> tuple[date | None, date | None]:
    """First and last UTC day with data in the spend, GPU-hour, idle or PUE marts present."""
    present = available_marts(con)
    parts = [
        f"select min(cast({col} as date)) as lo, max(cast({col} as date)) as hi from main.{mart}"
        for mart, col in _DATED_MARTS
        if mart in present
    ]
    if not parts:
        return None, None
    df = _query(
        con,
        "select min(lo) as first_day, max(hi) as last_day from (\n"
        + "\nunion all\n".join(parts)
        + "\n)",
    )
    first, last = df.iloc[0]["first_day"], df.iloc[0]["last_day"]
    if pd.isna(first) or pd.isna(last):
        return None, None
    return pd.Timestamp(first).date(), pd.Timestamp(last).date()


# --------------------------------------------------------------------------- overview figures


def spend_by_provider(con: Con, start: date, end: date) -> pd.DataFrame:
    """Headline spend: effective cost in the reporting currency per provider.

    Columns: provider, effective_cost. Reads fct_billing.ServiceProviderName,
    ChargePeriodStart, x_effective_cost_reporting.
    """
    return _query(
        con,
        """
        select coalesce(ServiceProviderName, '(none)') as provider,
               cast(sum(x_effective_cost_reporting) as double) as effective_cost
        from main.fct_billing
        where cast(ChargePeriodStart as date) between ? and ?
        group by 1
        order by effective_cost desc, provider
        """,
        (start, end),
    )


def daily_spend(con: Con, start: date, end: date) -> pd.DataFrame:
    """Daily spend chart. Columns: day, provider, effective_cost (by ChargePeriodStart's day)."""
    return _query(
        con,
        """
        select cast(ChargePeriodStart as date) as day,
               coalesce(ServiceProviderName, '(none)') as provider,
               cast(sum(x_effective_cost_reporting) as double) as effective_cost
        from main.fct_billing
        where cast(ChargePeriodStart as date) between ? and ?
        group by 1, 2
        order by 1, 2
        """,
        (start, end),
    )


def gpu_hours_summary(con: Con, start: date, end: date) -> pd.DataFrame:
    """GPU-hours paid and fleet utilisation, one row.

    Columns: gpu_hours (all four states), busy_gpu_hours, allocated_idle_gpu_hours,
    unallocated_gpu_hours, down_gpu_hours, utilization (busy / all; null when no hours), cost.
    Reads fct_gpu_hours.hour, busy_seconds, allocated_idle_seconds, unallocated_seconds,
    down_seconds, cost.
    """
    return _query(
        con,
        """
        select
            cast(coalesce(sum(busy_seconds + allocated_idle_seconds + unallocated_seconds
                              + down_seconds), 0) as double) / 3600 as gpu_hours,
            cast(coalesce(sum(busy_seconds), 0) as double) / 3600 as busy_gpu_hours,
            cast(coalesce(sum(allocated_idle_seconds), 0) as double) / 3600
                as allocated_idle_gpu_hours,
            cast(coalesce(sum(unallocated_seconds), 0) as double) / 3600 as unallocated_gpu_hours,
            cast(coalesce(sum(down_seconds), 0) as double) / 3600 as down_gpu_hours,
            cast(sum(busy_seconds) as double)
                / nullif(sum(busy_seconds + allocated_idle_seconds + unallocated_seconds
                             + down_seconds), 0) as utilization,
            cast(coalesce(sum(cost), 0) as double) as cost
        from main.fct_gpu_hours
        where cast(hour as date) between ? and ?
        """,
        (start, end),
    )


def idle_by_cause(con: Con, start: date, end: date) -> pd.DataFrame:
    """Idle GPU-hours and their cost per cause, every cause present (0 when none).

    Columns: cause, gpu_hours, cost. Reads fct_idle_gpu_hours.day, cause, gpu_hours, cost.
    """
    return _query(
        con,
        """
        with causes(cause, ord) as (
            values ('unallocated', 1), ('allocated_idle', 2), ('down', 3)
        ),
        idle as (
            select cause, sum(gpu_hours) as gpu_hours, sum(cost) as cost
            from main.fct_idle_gpu_hours
            where cast(day as date) between ? and ?
            group by cause
        )
        select c.cause,
               cast(coalesce(i.gpu_hours, 0) as double) as gpu_hours,
               cast(coalesce(i.cost, 0) as double) as cost
        from causes c left join idle i using (cause)
        order by c.ord
        """,
        (start, end),
    )


def idle_cost_daily(con: Con, start: date, end: date) -> pd.DataFrame:
    """Idle cost by cause and day. Columns: day, cause, gpu_hours, cost (fct_idle_gpu_hours)."""
    return _query(
        con,
        """
        select cast(day as date) as day, cause,
               cast(sum(gpu_hours) as double) as gpu_hours,
               cast(sum(cost) as double) as cost
        from main.fct_idle_gpu_hours
        where cast(day as date) between ? and ?
        group by 1, 2
        order by 1, 2
        """,
        (start, end),
    )


def top_runs(con: Con, start: date, end: date, limit: int = 10) -> pd.DataFrame:
    """The most expensive runs active in the range (their whole cost, not clipped to it).

    A run is in the range when it started on or before `end` and had not ended before `start`
    (running runs have no end); cost rows with no run in fct_runs, or not started, are kept.
    Columns: run_id, team, user_name, kind, state, started_at, ended_at, gpu_hours, cost,
    allocated_idle_cost. Reads fct_run_costs.run_id, team, gpu_hours, cost, allocated_idle_cost
    and fct_runs.run_id, team, user_name, kind, state, started_at, ended_at.
    """
    return _query(
        con,
        """
        select c.run_id,
               coalesce(r.team, c.team) as team,
               r.user_name, r.kind, r.state, r.started_at, r.ended_at,
               cast(c.gpu_hours as double) as gpu_hours,
               cast(c.cost as double) as cost,
               cast(c.allocated_idle_cost as double) as allocated_idle_cost
        from main.fct_run_costs c
        left join main.fct_runs r on r.run_id = c.run_id
        where r.started_at is null
           or (cast(r.started_at as date) <= ?
               and (r.ended_at is null or cast(r.ended_at as date) >= ?))
        order by c.cost desc nulls last, c.run_id
        limit ?
        """,
        (end, start, int(limit)),
    )


def pue_daily(con: Con, start: date, end: date) -> pd.DataFrame:
    """PUE per site and day. Columns: site, day, facility_kwh, it_kwh, pue, it_energy_estimated."""
    return _query(
        con,
        """
        select site, cast(day as date) as day,
               cast(facility_kwh as double) as facility_kwh,
               cast(it_kwh as double) as it_kwh,
               cast(pue as double) as pue,
               it_energy_estimated
        from main.fct_pue_daily
        where cast(day as date) between ? and ?
        order by day, site
        """,
        (start, end),
    )


# ------------------------------------------------------------------ headlines (whole window)


def spend_by_provider_total(con: Con) -> pd.DataFrame:
    """Every bill line's effective cost per provider. Columns: provider, effective_cost."""
    return _query(
        con,
        """
        select ServiceProviderName as provider,
               cast(sum(x_effective_cost_reporting) as double) as effective_cost
        from main.fct_billing
        group by 1
        order by 2 desc
        """,
    )


def gpu_hours_paid(con: Con) -> pd.DataFrame:
    """All GPU-hours of the fleet and their cost, one row. Columns: gpu_hours, cost."""
    return _query(
        con,
        "select count(*) as gpu_hours, cast(sum(cost) as double) as cost from main.fct_gpu_hours",
    )


def idle_totals(con: Con) -> pd.DataFrame:
    """Idle GPU-hours and cost per cause over the whole window. Columns: cause, gpu_hours,
    cost (fct_idle_gpu_hours)."""
    return _query(
        con,
        """
        select cause, cast(sum(gpu_hours) as double) as gpu_hours,
               cast(sum(cost) as double) as cost
        from main.fct_idle_gpu_hours
        group by 1
        order by 1
        """,
    )


def run_count(con: Con) -> int:
    return int(_query(con, "select count(*) as n from main.fct_runs")["n"].iloc[0])


def most_expensive_runs(con: Con, limit: int = 5) -> pd.DataFrame:
    """The costliest runs. Columns: run_id, job_name, team, kind, state, gpu_hours, cost."""
    return _query(
        con,
        """
        select c.run_id, r.job_name, r.team, r.kind, r.state,
               cast(c.gpu_hours as double) as gpu_hours, cast(c.cost as double) as cost
        from main.fct_run_costs c join main.fct_runs r using (run_id)
        order by c.cost desc nulls last
        limit ?
        """,
        (int(limit),),
    )


def pue_by_site(con: Con) -> pd.DataFrame:
    """PUE per site over the window (facility kWh / IT kWh). Columns: site, pue, estimated."""
    return _query(
        con,
        """
        select site, sum(facility_kwh) / nullif(sum(it_kwh), 0) as pue,
               bool_or(it_energy_estimated) as estimated
        from main.fct_pue_daily
        group by 1
        order by 1
        """,
    )


def failures(con: Con) -> pd.DataFrame:
    """Failed runs, one row. Columns: runs, cost, lost_work_cost, with_checkpoint."""
    return _query(
        con,
        """
        select count(*) as runs, cast(sum(c.cost) as double) as cost,
               cast(sum(c.lost_work_cost) as double) as lost_work_cost,
               count(*) filter (where c.last_checkpoint_at is not null) as with_checkpoint
        from main.fct_run_costs c join main.fct_runs r using (run_id)
        where r.failure_class is not null
        """,
    )


def fleet_health(con: Con) -> pd.DataFrame:
    """Fleet health over the window, one row. Columns: downtime_hours, xids, fatal_xids,
    thermal_throttle_gpu_hours, ecc_errors, remapped_rows, straggler_gpus."""
    return _query(
        con,
        """
        select sum(downtime_seconds) / 3600.0 as downtime_hours,
               coalesce(sum(xid_count), 0) as xids,
               coalesce(sum(fatal_xid_count), 0) as fatal_xids,
               sum(thermal_throttle_gpu_seconds) / 3600.0 as thermal_throttle_gpu_hours,
               cast(coalesce(sum(ecc_sbe_errors), 0) + coalesce(sum(ecc_dbe_errors), 0)
                    as bigint) as ecc_errors,
               cast(coalesce(sum(correctable_remapped_rows), 0)
                    + coalesce(sum(uncorrectable_remapped_rows), 0) as bigint) as remapped_rows,
               (select count(distinct gpu_uuid) from main.fct_stragglers) as straggler_gpus
        from main.fct_fleet_health_daily
        """,
    )


# ------------------------------------------------------------------ runs (the analyst notebook)


def run_costs(con: Con) -> pd.DataFrame:
    """Every column of fct_run_costs, one row per run."""
    return _query(con, "select * from main.fct_run_costs")


def runs(con: Con) -> pd.DataFrame:
    """Who ran each run and how it ended (fct_runs)."""
    return _query(
        con,
        """
        select run_id, scheduler, cluster, job_id, attempt, user_name, account, queue, kind,
               state, failure_class, started_at, ended_at, gpus
        from main.fct_runs
        """,
    )


def run_cost_totals(con: Con) -> pd.DataFrame:
    """fct_run_costs summed by DuckDB, one row: runs, cost, gpu_hours, allocated_idle_cost."""
    return _query(
        con,
        """
        select count(*) as runs,
               cast(coalesce(sum(cost), 0) as double) as cost,
               cast(coalesce(sum(gpu_hours), 0) as double) as gpu_hours,
               cast(coalesce(sum(allocated_idle_cost), 0) as double) as allocated_idle_cost
        from main.fct_run_costs
        """,
    )


def run_cost_by_team(con: Con) -> pd.DataFrame:
    """Direct run cost per team (fct_run_costs). Columns: team, cost."""
    return _query(
        con,
        """
        select coalesce(team, '(none)') as team, cast(coalesce(sum(cost), 0) as double) as cost
        from main.fct_run_costs
        group by 1
        """,
    )
