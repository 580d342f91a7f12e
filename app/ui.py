"""Shared page furniture: the warehouse check, the sidebar date-range filter, number formats.

`app/main.py` builds the sidebar once per rerun and runs the selected page with `run_page()`;
pages read the result with `context()`. A page script run on its own (without `main.py`) builds
the sidebar itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import duckdb
import streamlit as st

from app import queries

_CONTEXT_KEY = "_fleetledger_context"


@dataclass(frozen=True)
class Context:
    """What every page needs: where the snapshot is and the selected UTC date range."""

    home: Path
    warehouse: Path
    start: date
    end: date
    currency: str
    snapshot_time: datetime


def missing_warehouse_message(path: Path) -> str:
    return (
        f"**No warehouse yet.** fleetledger looks for the published snapshot at `{path}`, "
        "and there is none.\n\n"
        "Run `fleetledger demo` to generate a demo fleet and build it, or `fleetledger run` "
        "to run the pipeline on your configured sources; then reload this page. "
        "Set `FLEETLEDGER_HOME` to read another fleetledger home."
    )


def require_warehouse() -> Path:
    """The snapshot's path; shows a friendly message and stops the page when there is none."""
    path = queries.warehouse_path()
    if not path.is_file():
        st.title("fleetledger cost explorer")
        st.info(missing_warehouse_message(path), icon=":material/database:")
        st.stop()
    return path


def sidebar() -> Context:
    """Warehouse check and the sidebar date-range filter."""
    path = require_warehouse()
    try:
        first, last = queries.date_bounds()
    except duckdb.Error as err:
        st.title("fleetledger cost explorer")
        st.error(f"Could not read the warehouse at `{path}`: {err}")
        st.stop()
    snapshot_time = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    if first is None or last is None:
        first = last = snapshot_time.date()
    st.sidebar.header("Filters")
    picked = st.sidebar.date_input(
        "Date range (UTC)",
        value=(first, last),
        min_value=first,
        max_value=last,
        key=f"date_range:{first}:{last}",
        help="UTC days. Defaults to every day the published snapshot holds.",
    )
    start, end = _as_range(picked, first, last)
    st.sidebar.caption(
        f"Snapshot `{path}`, published {snapshot_time:%Y-%m-%d %H:%M} UTC; "
        f"data from {first} to {last}."
    )
    return Context(
        home=path.parent,
        warehouse=path,
        start=start,
        end=end,
        currency=queries.reporting_currency(path.parent),
        snapshot_time=snapshot_time,
    )


def run_page(page: Any, ctx: Context) -> None:
    """Run the selected `st.navigation` page with `ctx` visible to it through `context()`."""
    st.session_state[_CONTEXT_KEY] = ctx
    try:
        page.run()
    finally:
        st.session_state.pop(_CONTEXT_KEY, None)


def context() -> Context:
    """The context `main.py` set up for this rerun (or a fresh one for a page run on its own)."""
    ctx = st.session_state.get(_CONTEXT_KEY)
    if isinstance(ctx, Context):
        return ctx
    return sidebar()


@contextmanager
def figure_guard(title: str) -> Iterator[None]:
    """Show a warning instead of failing the page when a mart is missing from the snapshot."""
    try:
        yield
    except duckdb.CatalogException as err:
        first_line = str(err).splitlines()[0]
        st.warning(f"{title}: not available in this snapshot ({first_line}).")


def _as_range(picked: object, first: date, last: date) -> tuple[date, date]:
    # While the user is choosing, the widget returns a 1-tuple (only the start).
    if isinstance(picked, tuple | list):
        days = [d for d in picked if isinstance(d, date)]
        if len(days) >= 2:
            return min(days[0], days[1]), max(days[0], days[1])
        if len(days) == 1:
            return days[0], days[0]
        return first, last
    if isinstance(picked, date):
        return picked, picked
    return first, last


def money(value: float | None, currency: str) -> str:
    if value is None or value != value:  # None or NaN
        return "–"
    return f"{value:,.2f} {currency}"


def hours(value: float | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:,.1f}"


def percent(value: float | None) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:.1%}"
