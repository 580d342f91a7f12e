"""The cost explorer in a real browser: `fleetledger app` serving a copy of the session fleet's
warehouse on 127.0.0.1, every page of its navigation loaded in headless Chromium.

One app server for the whole module. Pages are discovered from the rendered navigation links,
so a page added to `st.navigation` is covered without editing this file.
"""

from __future__ import annotations

import json
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from browser_app import (
    NO_SAVE_PICKER,
    TITLE,
    AppServer,
    app_server,
    csv_rows,
    download,
    load,
    nav_urls,
    page_slug,
    table_csv,
    wait_rendered,
)

pytestmark = pytest.mark.warehouse

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MONEY_TOL = 0.01  # the table shows money with 2 decimals


@pytest.fixture(scope="module")
def app_home(pipeline_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A home holding a copy of the session fleet's published warehouse and its config."""
    home = tmp_path_factory.mktemp("browser_home")
    for name in ("warehouse.duckdb", "fleetledger.yml", "ground_truth.json"):
        shutil.copy2(pipeline_home / name, home / name)
    return home


@pytest.fixture(scope="module")
def server(app_home: Path, artifacts: Path) -> Iterator[AppServer]:
    with app_server(app_home, artifacts) as srv:
        yield srv
    assert srv.process.poll() is not None, "the app server is still running"


@pytest.fixture(scope="module")
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
    context.add_init_script(NO_SAVE_PICKER)
    pg = context.new_page()
    try:
        yield pg
    finally:
        context.close()


@pytest.fixture(scope="module")
def pages(page: Any, server: AppServer) -> list[str]:
    return nav_urls(page, server.url)


def test_every_page_loads_without_exception(
    page: Any, server: AppServer, pages: list[str], artifacts: Path
) -> None:
    loads = []
    for url in pages:
        shown = load(page, url)
        shot = artifacts / f"page-{page_slug(url)}.png"
        page.screenshot(path=str(shot), full_page=True)
        loads.append(shown)
        assert shot.stat().st_size > 0
    failed = [ld for ld in loads if not ld.ok]
    assert failed == [], f"{failed}\nserver log:\n{server.log_tail()}"
    # the app has at least its Overview; every page has a title of its own
    assert "Overview" in [ld.title for ld in loads]
    assert len({ld.title for ld in loads}) == len(loads)
    print(f"{len(loads)} page(s) loaded: {[ld.title for ld in loads]}")


TEAM_WIDGETS = '[data-testid="stSelectbox"], [data-testid="stMultiSelect"]'


def _team_filters(page: Any) -> list[Any]:
    """The select boxes and multiselects of the page (main area or sidebar) labelled team."""
    widgets = page.locator(TEAM_WIDGETS)
    found = []
    for i in range(widgets.count()):
        label = widgets.nth(i).locator('[data-testid="stWidgetLabel"]')
        if label.count() and re.search(r"\bteams?\b", label.first.inner_text(), re.IGNORECASE):
            found.append(widgets.nth(i))
    return found


def _widget_text(widget: Any) -> str:
    """What a select widget shows: its text and the values of its inputs."""
    return str(
        widget.evaluate(
            "e => [e.innerText, ...[...e.querySelectorAll('input')].map(i => i.value)].join(' ')"
        )
    )


def test_query_parameters_are_kept_and_read(
    page: Any, pages: list[str], app_home: Path, artifacts: Path
) -> None:
    """A link with `?team=T` opens every page with the parameter kept in the URL, and a page
    with a team filter (a select box or multiselect labelled "team") shows T selected in it.

    Assumed contract with the pages (issue 14 item 2, branch explorer14): the team filter's
    query parameter is `team`, its value a team name as in the marts.
    """
    runs = json.loads((app_home / "ground_truth.json").read_text())["runs"]
    team = sorted({r["team"] for r in runs})[-1]
    with_filter = []
    for url in pages:
        shown = load(page, f"{url}?team={team}")
        assert shown.ok, shown
        assert parse_qs(urlsplit(page.url).query).get("team") == [team], page.url
        filters = _team_filters(page)
        if filters:
            with_filter.append(url)
            page.screenshot(path=str(artifacts / f"query-{page_slug(url)}.png"), full_page=True)
            values = [_widget_text(f) for f in filters]
            assert any(team in v for v in values), f"{url}?team={team}: team filter shows {values}"
    print(f"pages with a team filter (read from ?team=): {with_filter or 'none yet'}")


def _overview(pages: list[str], page: Any) -> str:
    for url in pages:
        if load(page, url).title == "Overview":
            return url
    raise AssertionError("no Overview page")


def test_table_csv_export_equals_the_table(page: Any, pages: list[str], app_home: Path) -> None:
    """The download helper on the download every table has (its toolbar's CSV export): the
    Overview's top runs table downloads the runs the query layer returns, most expensive first,
    and the first is the ground truth's most expensive run at its cost."""
    from fleetledger import queries as q

    _overview(pages, page)
    frames = page.locator('[data-testid="stDataFrame"]')
    frames.first.wait_for()
    exported, headers = None, []
    for i in range(frames.count()):
        rows = csv_rows(table_csv(page, frames.nth(i)))
        headers.append(rows[0] if rows else [])
        if rows and rows[0][:1] == ["run_id"]:
            exported = rows
            break
    assert exported is not None, f"no table with a run_id column on the Overview: {headers}"
    header, body = exported[0], exported[1:]
    with q.connect(app_home / "warehouse.duckdb") as con:
        first, last = q.date_bounds(con)
        expected = q.top_runs(con, first, last, limit=10)
    assert [r[0] for r in body] == expected["run_id"].tolist()
    cost_col = header.index("cost")
    shown_cost = [float(r[cost_col].split()[0].replace(",", "")) for r in body]
    assert shown_cost == pytest.approx(expected["cost"].tolist(), abs=MONEY_TOL)
    runs = json.loads((app_home / "ground_truth.json").read_text())["runs"]
    top = max(float(r["cost"]) for r in runs)
    assert shown_cost[0] == pytest.approx(top, abs=MONEY_TOL)


def test_date_filter_narrows_the_figures(page: Any, pages: list[str], app_home: Path) -> None:
    """The sidebar's date range, set in the browser to the first day only, reruns the Overview
    on that day: its total spend is the query layer's spend of that one day."""
    from fleetledger import queries as q

    with q.connect(app_home / "warehouse.duckdb") as con:
        first, last = q.date_bounds(con)
        day_one = float(q.spend_by_provider(con, first, first)["effective_cost"].sum())
        every_day = float(q.spend_by_provider(con, first, last)["effective_cost"].sum())
    assert first is not None and last is not None and first < last
    _overview(pages, page)
    assert _metric_number(page, "Effective spend — total") == every_day
    end_day = page.get_by_role("spinbutton", name="day, Date range (UTC) end date")
    end_day.click()
    page.keyboard.type(f"{first.day:02d}")
    page.keyboard.press("Enter")
    page.locator(TITLE).click()  # leave the field: the widget commits its value
    page.locator('[data-testid="stMain"]').get_by_text(f"UTC days {first} to {first}.").wait_for()
    wait_rendered(page)
    assert _metric_number(page, "Effective spend — total") == day_one
    assert day_one < every_day


def _metric_number(page: Any, label: str) -> float:
    metric = page.locator('[data-testid="stMetric"]', has_text=label).first
    return _shown_money(metric.locator('[data-testid="stMetricValue"]').inner_text())


class _Shown(float):
    """A number as displayed, equal to any value it rounds from ('35,278.06 USD', '$35.3k')."""

    step: float

    def __new__(cls, value: float, step: float) -> _Shown:
        obj = super().__new__(cls, value)
        obj.step = step
        return obj

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, int | float):
            return NotImplemented
        return abs(float(self) - float(other)) <= self.step / 2 + 1e-9

    __hash__ = float.__hash__


def _shown_money(text: str) -> _Shown:
    match = re.search(r"(-?[\d,]+(?:\.(\d+))?)\s*([kKMB]?)", text)
    assert match, f"no number in {text!r}"
    scale = {"": 1.0, "k": 1e3, "K": 1e3, "M": 1e6, "B": 1e9}[match.group(3)]
    decimals = len(match.group(2) or "")
    value = float(match.group(1).replace(",", "")) * scale
    return _Shown(value, scale * 10.0**-decimals)


def _cells(rows: list[list[str]]) -> list[list[str | float]]:
    out: list[list[str | float]] = []
    for row in rows:
        parsed: list[str | float] = []
        for cell in row:
            try:
                parsed.append(round(float(cell.split()[0].replace(",", "")), 2))
            except (ValueError, IndexError):
                parsed.append(cell)
        out.append(parsed)
    return out


def test_download_buttons_return_the_table_shown(page: Any, pages: list[str]) -> None:
    """Every `st.download_button` of the app downloads exactly the rows of the table beside it
    (the table on its page whose toolbar export has the same header)."""
    checked = []
    for url in pages:
        load(page, url)
        buttons = page.locator('[data-testid="stDownloadButton"] button')
        for i in range(buttons.count()):
            button = buttons.nth(i)
            if not button.is_visible():  # in a collapsed expander or another tab
                continue
            got = csv_rows(download(page, button.click))
            assert got, f"{url}: download {i} is empty"
            frames = page.locator('[data-testid="stDataFrame"]')
            tables = [csv_rows(table_csv(page, frames.nth(j))) for j in range(frames.count())]
            same = [t for t in tables if t and t[0] == got[0]]
            assert same, f"{url}: no table shows the download's columns {got[0]}"
            assert _cells(got) in [_cells(t) for t in same], f"{url}: download != table"
            checked.append(url)
    if not checked:
        pytest.skip(
            "no st.download_button in the app yet: the Cost explorer page (issue 14, "
            "app/views/ from branch explorer14) adds the CSV download of its table"
        )
