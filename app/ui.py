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
    url_start, url_end = _url_day("start", first, last), _url_day("end", first, last)
    picked = st.sidebar.date_input(
        "Date range (UTC)",
        value=(url_start or first, url_end or last),
        min_value=first,
        max_value=last,
        key=f"date_range:{first}:{last}",
        help="UTC days. Defaults to every day the published snapshot holds.",
    )
    start, end = _as_range(picked, first, last)
    # the range lives in the URL (start, end) unless it is the default (the whole snapshot)
    set_url_params(
        start=None if start == first and end == last else start.isoformat(),
        end=None if start == first and end == last else end.isoformat(),
    )
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
    except (duckdb.CatalogException, duckdb.BinderException) as err:
        first_line = str(err).splitlines()[0]
        st.warning(f"{title}: not available in this snapshot ({first_line}).")


def require_mart(mart: str, what: str) -> bool:
    """Whether the snapshot holds `mart`; shows a "run the pipeline" note when it does not."""
    if queries.has_mart(mart):
        return True
    st.info(
        f"**No {what} yet: run the pipeline.** The published snapshot has no `{mart}` mart; "
        "`fleetledger run` builds it (with budgets and alerts configured where it needs them).",
        icon=":material/hourglass_empty:",
    )
    return False


def source(mart: str) -> None:
    """The caption under a figure naming the mart(s) it comes from."""
    st.caption(f"Source: `{mart}`.")


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
    """The exact figure: 352,735.52 USD."""
    if value is None or value != value:  # None or NaN
        return "–"
    return f"{value:,.2f} {currency}"


_SYMBOLS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}


def compact_money(value: float | None, currency: str) -> str:
    """A figure that fits a metric tile: $352.7k, $1.2M, $845.20 (the exact one goes in help)."""
    if value is None or value != value:
        return "–"
    sign = "-" if value < 0 else ""
    size = abs(value)
    for limit, suffix in ((1e9, "B"), (1e6, "M"), (1e3, "k")):
        if size >= limit:
            number = f"{size / limit:.1f}{suffix}"
            break
    else:
        number = f"{size:.2f}"
    symbol = _SYMBOLS.get(currency)
    return f"{sign}{symbol}{number}" if symbol else f"{sign}{number} {currency}"


def exact_help(value: float | None, currency: str, text: str) -> str:
    """A metric's help: the exact figure first, then what it is."""
    return f"Exact: {money(value, currency)}. {text}"


def change(current: float | None, previous: float | None) -> str | None:
    """A metric delta vs the previous period: '+12.3%' (None when there is nothing to compare)."""
    if current is None or previous is None or current != current or previous != previous:
        return None
    if previous == 0:
        return None
    return f"{(current - previous) / abs(previous):+.1%}"


# --------------------------------------------------------------------------- URL state


def url_param(name: str) -> str | None:
    """One query parameter of the page's URL (None when absent or empty)."""
    value = st.query_params.get(name)
    return value if value else None


def url_list(name: str) -> list[str]:
    """A repeatable query parameter (`team=a&team=b`) as a list."""
    return [v for v in st.query_params.get_all(name) if v]


def url_choice(name: str, options: list[str] | tuple[str, ...], default: str) -> str:
    value = url_param(name)
    return value if value in options else default


def set_url_params(**values: str | list[str] | None) -> None:
    """Write the view's state to the URL: set each given parameter, drop None / empty ones."""
    for name, value in values.items():
        if value is None or value == [] or value == "":
            if name in st.query_params:
                del st.query_params[name]
        elif st.query_params.get_all(name) != ([value] if isinstance(value, str) else value):
            st.query_params[name] = value


def _url_day(name: str, first: date, last: date) -> date | None:
    raw = url_param(name)
    if raw is None:
        return None
    try:
        day = date.fromisoformat(raw)
    except ValueError:
        return None
    return min(max(day, first), last)


def hours(value: float | None) -> str:
    if value is None or value != value:
        return "–"
    return f"{value:,.1f}"


def percent(value: float | None) -> str:
    if value is None or value != value:
        return "n/a"
    return f"{value:.1%}"


# --------------------------------------------------------------------------- charts


def stacked_bars(
    df: Any, x: str, y: str, color: str, x_label: str, y_label: str, mart: str
) -> None:
    """A stacked bar chart (Plotly) with labelled axes and the mart it comes from."""
    import plotly.express as px

    fig = px.bar(df, x=x, y=y, color=color, labels={x: x_label, y: y_label, color: color})
    fig.update_layout(barmode="stack", xaxis_title=x_label, yaxis_title=y_label, height=380)
    st.plotly_chart(fig, width="stretch")
    source(mart)


def lines(
    df: Any,
    x: str,
    y: str | list[str],
    x_label: str,
    y_label: str,
    mart: str,
    color: str | None = None,
) -> None:
    """A line chart (Plotly) with labelled axes and the mart it comes from."""
    import plotly.express as px

    fig = px.line(df, x=x, y=y, color=color, labels={x: x_label})
    fig.update_layout(xaxis_title=x_label, yaxis_title=y_label, height=360)
    st.plotly_chart(fig, width="stretch")
    source(mart)
