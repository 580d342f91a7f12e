"""Every SQL query the cost explorer runs: one function per figure.

Each function opens the published warehouse read-only (`$FLEETLEDGER_HOME/warehouse.duckdb`, or
the `home` given), runs selects and aggregations over marts in schema `main` only, and returns a
pandas DataFrame. Results are cached with `st.cache_data` keyed on the snapshot file's mtime and
size, so a newly published snapshot shows up on the next rerun without restarting the app.

Days are UTC calendar days (`cast(ts as date)` with the session time zone set to UTC).
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import streamlit as st
import yaml

WAREHOUSE_FILE = "warehouse.duckdb"
CONFIG_FILE = "fleetledger.yml"
IDLE_CAUSES: tuple[str, ...] = ("unallocated", "allocated_idle", "down")


class WarehouseMissingError(FileNotFoundError):
    """No published warehouse snapshot at the expected path yet."""

    def __init__(self, path: Path) -> None:
        super().__init__(f"no warehouse at {path}")
        self.path = path


def fleetledger_home(home: str | Path | None = None) -> Path:
    """`home` when given, else `$FLEETLEDGER_HOME`, else `./data` (as the CLI does)."""
    raw = home if home is not None else os.environ.get("FLEETLEDGER_HOME", "./data")
    return Path(raw).expanduser().resolve()


def warehouse_path(home: str | Path | None = None) -> Path:
    return fleetledger_home(home) / WAREHOUSE_FILE


def snapshot_version(path: Path) -> tuple[int, int]:
    """What identifies one published snapshot: (mtime in ns, size in bytes)."""
    stat = path.stat()
    return (stat.st_mtime_ns, stat.st_size)


@st.cache_data(show_spinner=False, max_entries=512)
def _cached_query(
    path: str, version: tuple[int, int], sql: str, params: tuple[Any, ...]
) -> pd.DataFrame:
    # `version` is only part of the cache key: a new snapshot is a new key.
    del version
    con = duckdb.connect(path, read_only=True)
    try:
        con.execute("SET TimeZone = 'UTC'")
        return con.execute(sql, list(params)).df()
    finally:
        con.close()


def _query(sql: str, params: tuple[Any, ...] = (), home: str | Path | None = None) -> pd.DataFrame:
    path = warehouse_path(home)
    if not path.is_file():
        raise WarehouseMissingError(path)
    return _cached_query(str(path), snapshot_version(path), sql, params)


def reporting_currency(home: str | Path | None = None) -> str:
    """The config's `reporting_currency` (the unit of every `cost` column); USD by default."""
    path = fleetledger_home(home) / CONFIG_FILE
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "USD"
    value = data.get("reporting_currency") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else "USD"


# --------------------------------------------------------------------------- filters


# (mart, the expression whose UTC day dates a row): what the date-range filter spans
_DATED_MARTS: tuple[tuple[str, str], ...] = (
    ("fct_billing", "ChargePeriodStart"),
    ("fct_gpu_hours", "hour"),
    ("fct_idle_gpu_hours", "day"),
    ("fct_pue_daily", "day"),
)


def available_marts(home: str | Path | None = None) -> set[str]:
    """Names of the tables and views in schema `main` of the snapshot."""
    df = _query(
        """
        select table_name as name from duckdb_tables() where schema_name = 'main'
        union
        select view_name from duckdb_views() where schema_name = 'main' and not internal
        """,
        home=home,
    )
    return set(df["name"])


def date_bounds(home: str | Path | None = None) -> tuple[date | None, date | None]:
    """First and last UTC day with data in the spend, GPU-hour, idle or PUE marts present."""
    present = available_marts(home)
    parts = [
        f"select min(cast({col} as date)) as lo, max(cast({col} as date)) as hi from main.{mart}"
        for mart, col in _DATED_MARTS
        if mart in present
    ]
    if not parts:
        return None, None
    df = _query(
        "select min(lo) as first_day, max(hi) as last_day from (\n"
        + "\nunion all\n".join(parts)
        + "\n)",
        home=home,
    )
    first, last = df.iloc[0]["first_day"], df.iloc[0]["last_day"]
    if pd.isna(first) or pd.isna(last):
        return None, None
    return pd.Timestamp(first).date(), pd.Timestamp(last).date()


# --------------------------------------------------------------------------- overview figures


def spend_by_provider(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    """Headline spend: effective cost in the reporting currency per provider.

    Columns: provider, effective_cost. Reads fct_billing.ServiceProviderName,
    ChargePeriodStart, x_effective_cost_reporting.
    """
    return _query(
        """
        select coalesce(ServiceProviderName, '(none)') as provider,
               cast(sum(x_effective_cost_reporting) as double) as effective_cost
        from main.fct_billing
        where cast(ChargePeriodStart as date) between ? and ?
        group by 1
        order by effective_cost desc, provider
        """,
        (start, end),
        home,
    )


def daily_spend(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    """Daily spend chart. Columns: day, provider, effective_cost (by ChargePeriodStart's day)."""
    return _query(
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
        home,
    )


def gpu_hours_summary(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    """GPU-hours paid and fleet utilisation, one row.

    Columns: gpu_hours (all four states), busy_gpu_hours, allocated_idle_gpu_hours,
    unallocated_gpu_hours, down_gpu_hours, utilization (busy / all; null when no hours), cost.
    Reads fct_gpu_hours.hour, busy_seconds, allocated_idle_seconds, unallocated_seconds,
    down_seconds, cost.
    """
    return _query(
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
        home,
    )


def idle_by_cause(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    """Idle GPU-hours and their cost per cause, every cause present (0 when none).

    Columns: cause, gpu_hours, cost. Reads fct_idle_gpu_hours.day, cause, gpu_hours, cost.
    """
    return _query(
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
        home,
    )


def idle_cost_daily(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    """Idle cost by cause and day. Columns: day, cause, gpu_hours, cost (fct_idle_gpu_hours)."""
    return _query(
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
        home,
    )


def top_runs(
    start: date, end: date, limit: int = 10, home: str | Path | None = None
) -> pd.DataFrame:
    """The most expensive runs active in the range (their whole cost, not clipped to it).

    A run is in the range when it started on or before `end` and had not ended before `start`
    (running runs have no end); cost rows with no run in fct_runs, or not started, are kept.
    Columns: run_id, team, user_name, kind, state, started_at, ended_at, gpu_hours, cost,
    allocated_idle_cost. Reads fct_run_costs.run_id, team, gpu_hours, cost, allocated_idle_cost
    and fct_runs.run_id, team, user_name, kind, state, started_at, ended_at.
    """
    return _query(
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
        home,
    )


def pue_daily(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    """PUE per site and day. Columns: site, day, facility_kwh, it_kwh, pue, it_energy_estimated."""
    return _query(
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
        home,
    )
