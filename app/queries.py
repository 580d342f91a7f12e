"""The app's side of the query layer: the figures of `fleetledger.queries` (the one module that
holds the SQL over the marts, shared with the CLI and the notebooks) on the published snapshot
(`$FLEETLEDGER_HOME/warehouse.duckdb`, or the `home` given), cached with `st.cache_data` keyed on
the snapshot file's mtime and size, so a newly published snapshot shows up on the next rerun
without restarting the app.
"""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path
from typing import Any

import pandas as pd
import streamlit as st
import yaml

from fleetledger import queries as q
from fleetledger import queries_economics, queries_fleet, queries_runs, queries_spend, yaml_text

WAREHOUSE_FILE = "warehouse.duckdb"
CONFIG_FILE = "fleetledger.yml"
IDLE_CAUSES = q.IDLE_CAUSES


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


# the query layer's modules, searched in this order for a figure's function
_MODULES = (q, queries_spend, queries_runs, queries_fleet, queries_economics)


def _function(figure: str) -> Any:
    for module in _MODULES:
        fn = getattr(module, figure, None)
        if callable(fn) and not figure.startswith("_"):
            return fn
    raise AttributeError(f"no query-layer figure {figure!r}")


@st.cache_data(show_spinner=False, max_entries=512)
def _cached(path: str, version: tuple[int, int], figure: str, args: tuple[Any, ...]) -> Any:
    # `version` is only part of the cache key: a new snapshot is a new key.
    del version
    with q.connect(path) as con:
        return _function(figure)(con, *args)


def _figure(figure: str, *args: Any, home: str | Path | None = None) -> Any:
    path = warehouse_path(home)
    if not path.is_file():
        raise WarehouseMissingError(path)
    return _cached(str(path), snapshot_version(path), figure, args)


def figure(name: str, *args: Any, home: str | Path | None = None) -> Any:
    """Any query-layer function `name(con, *args)` on the published snapshot, cached per
    snapshot: `figure("spend_breakdown", start, end, "team", "separate", {})`."""
    return _figure(name, *args, home=home)


def has_mart(name: str, home: str | Path | None = None) -> bool:
    """Whether the snapshot holds the mart (the forecast and alert marts may not exist yet)."""
    return name in available_marts(home)


def reporting_currency(home: str | Path | None = None) -> str:
    """The config's `reporting_currency` (the unit of every `cost` column); USD by default."""
    path = fleetledger_home(home) / CONFIG_FILE
    try:
        data = yaml_text.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError):
        return "USD"
    value = data.get("reporting_currency") if isinstance(data, dict) else None
    return value if isinstance(value, str) and value else "USD"


def available_marts(home: str | Path | None = None) -> set[str]:
    """Names of the tables and views in schema `main` of the snapshot."""
    return _figure("available_marts", home=home)


def date_bounds(home: str | Path | None = None) -> tuple[date | None, date | None]:
    """First and last UTC day with data in the spend, GPU-hour, idle or PUE marts present."""
    return _figure("date_bounds", home=home)


def spend_by_provider(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    return _figure("spend_by_provider", start, end, home=home)


def daily_spend(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    return _figure("daily_spend", start, end, home=home)


def gpu_hours_summary(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    return _figure("gpu_hours_summary", start, end, home=home)


def idle_by_cause(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    return _figure("idle_by_cause", start, end, home=home)


def idle_cost_daily(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    return _figure("idle_cost_daily", start, end, home=home)


def top_runs(
    start: date, end: date, limit: int = 10, home: str | Path | None = None
) -> pd.DataFrame:
    return _figure("top_runs", start, end, int(limit), home=home)


def pue_daily(start: date, end: date, home: str | Path | None = None) -> pd.DataFrame:
    return _figure("pue_daily", start, end, home=home)
