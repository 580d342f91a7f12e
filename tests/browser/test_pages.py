"""The cost explorer in a real browser: `fleetledger app` serving a copy of the session fleet's
warehouse on 127.0.0.1, every page of its navigation loaded in headless Chromium.

One app server for the whole module. Pages are discovered from the rendered navigation links,
so a page added to `st.navigation` is covered without editing this file. The last tests use the
explorer with the mouse and keyboard (a group-by, a filter, a run drill-down) and check the
figures shown against the fleet's ground truth and the view against the URL.
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


# --------------------------------------------------------------------- widgets, as a user uses them


def _widget(page: Any, key: str) -> Any:
    """A widget by its Streamlit key (the `st-key-<key>` class of its element container)."""
    return page.locator(f".st-key-{key}")


def _choose(page: Any, key: str, option: str) -> None:
    """Open a select box or multiselect (a click on its chevron: a click in its text field lists
    only the options matching the text shown) and click `option` in the list it opens; a
    multiselect's list stays open after a pick, so Escape closes it."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout
    from playwright.sync_api import expect

    listbox = page.get_by_role("listbox")
    wanted = listbox.get_by_role("option", name=option, exact=True)
    # the widget is re-rendered by the rerun a previous pick started: a click on the chevron of
    # the old element opens nothing, and a list open while the rerun lands is replaced under the
    # pointer (its option "not stable", then detached), so the list is opened and the option
    # clicked again (up to three times) until the widget shows the option as picked (a click on
    # an option the rerun replaced at that instant lands on nothing, and the URL never changes)
    for attempt in range(3):
        if attempt and page.evaluate(_PICKED_JS, [key, option]):
            break  # the last try's pick landed after its wait
        _widget(page, key).locator('button[aria-haspopup="listbox"]').click()
        try:
            expect(wanted).to_be_visible(timeout=10_000)
            wanted.click(timeout=10_000)
            if listbox.is_visible():
                page.keyboard.press("Escape")
            _wait_picked(page, key, option)
            break
        except (AssertionError, PlaywrightTimeout):
            if attempt == 2:
                raise
            if listbox.is_visible():
                page.keyboard.press("Escape")
    expect(listbox).to_be_hidden()


# whether the widget of a key shows an option as picked: a select box's combobox holds it as
# its value, a multiselect shows it as a tag (an element with `data-tag`, labelled the option)
_PICKED_JS = """([key, option]) => {
    const widget = document.querySelector(`.st-key-${key}`);
    if (!widget) return false;
    const values = [...widget.querySelectorAll('input')].map((input) => input.value);
    const tags = [...widget.querySelectorAll('[data-tag]')]
        .map((tag) => tag.getAttribute('aria-label'));
    return values.includes(option) || tags.includes(option);
}"""


def _wait_picked(page: Any, key: str, option: str) -> None:
    page.wait_for_function(_PICKED_JS, arg=[key, option], timeout=10_000)


def _rerun_to(page: Any, *, params: dict[str, list[str] | None], text: str) -> None:
    """Wait (Playwright auto-waiting, no sleeps) for the rerun a widget change starts: the URL
    carries `params` (None: the parameter is absent), `text` shows, and the run finished."""
    from playwright.sync_api import expect

    def _url_has(url: str) -> bool:
        query = parse_qs(urlsplit(url).query)
        return all(query.get(name) == value for name, value in params.items())

    # Streamlit writes the query string with history.replaceState: polled in the page, not
    # awaited as a navigation event (page.wait_for_url missed one in a CI run)
    page.wait_for_function(
        """(params) => {
            const query = new URLSearchParams(window.location.search);
            return Object.entries(params).every(([name, value]) => value === null
                ? !query.has(name)
                : JSON.stringify(query.getAll(name)) === JSON.stringify(value));
        }""",
        arg=params,
        timeout=45_000,
    )
    expect(page.locator('[data-testid="stMain"]').get_by_text(text, exact=True)).to_be_visible()
    wait_rendered(page)
    assert _url_has(page.url), page.url


def _shown_table(page: Any, columns: set[str]) -> list[dict[str, str]]:
    """The rows of the one table on the page whose header has `columns`, read through its
    toolbar's CSV export (what it shows)."""
    frames = page.locator('[data-testid="stDataFrame"]')
    tables = [csv_rows(table_csv(page, frames.nth(i))) for i in range(frames.count())]
    found = [t for t in tables if t and columns <= set(t[0])]
    assert len(found) == 1, f"{len(found)} tables have {columns}: {[t[:1] for t in tables]}"
    header, *body = found[0]
    return [dict(zip(header, row, strict=True)) for row in body]


def _number(cell: str) -> float:
    return float(cell.split()[0].replace(",", ""))


def _page_of(pages: list[str], path: str) -> str:
    found = [url for url in pages if urlsplit(url).path.rstrip("/").endswith(f"/{path}")]
    assert found, f"no /{path} page in the navigation: {pages}"
    return found[0]


def _truth(app_home: Path) -> dict[str, Any]:
    return dict(json.loads((app_home / "ground_truth.json").read_text()))


def _runs_cost_by_team(truth: dict[str, Any], provider: str | None = None) -> dict[str, float]:
    """Each team's runs' cost (ground truth: GPU-seconds x the node's rate), on one provider's
    hosts when `provider` is given."""
    host_provider = {n["host"]: n["provider"] for n in truth["nodes"]}
    cost: dict[str, float] = {}
    for run in truth["runs"]:
        if provider is None or {host_provider[h] for h in run["hosts"]} == {provider}:
            cost[run["team"]] = cost.get(run["team"], 0.0) + float(run["cost"])
    return cost


def test_explorer_group_by_through_the_ui(
    page: Any, pages: list[str], app_home: Path, artifacts: Path
) -> None:
    """The Cost explorer's group-by, changed with the mouse: picking "provider" reruns the page
    grouped by provider and writes `group=provider` to the URL; picking "team" back shows each
    team's GPU-node cost equal to its runs' cost in the ground truth (research: its spend too,
    it has no other bill lines, e.g. 7,695.37), the table summing to the bill (35,278.06), and
    drops `group` from the URL (team is the default, left out)."""
    truth = _truth(app_home)
    bill = {p: float(v["effective_cost"]) for p, v in truth["bill_totals"].items()}
    costs = _page_of(pages, "costs")
    assert load(page, costs).ok

    _choose(page, "costs_group", "provider")
    _rerun_to(page, params={"group": ["provider"]}, text="Spend by provider")
    by_provider = {r["provider"]: r for r in _shown_table(page, {"spend", "share"})}
    page.screenshot(path=str(artifacts / "costs-group-provider.png"), full_page=True)
    # idle shown separately: the GPU nodes' unallocated + down cost is the group (idle), so a
    # provider's row is under its bill; with it, the table is the whole bill
    assert set(by_provider) - {"(idle)"} == set(bill)
    total = sum(_number(r["spend"]) for r in by_provider.values())
    assert total == pytest.approx(sum(bill.values()), abs=MONEY_TOL * len(by_provider))

    _choose(page, "costs_group", "team")
    _rerun_to(page, params={"group": None}, text="Spend by team")
    by_team = {r["team"]: r for r in _shown_table(page, {"spend", "share"})}
    page.screenshot(path=str(artifacts / "costs-group-team.png"), full_page=True)
    runs_cost = _runs_cost_by_team(truth)
    for team, cost in runs_cost.items():
        assert _number(by_team[team]["gpu_node_cost"]) == pytest.approx(cost, abs=MONEY_TOL)
    assert _number(by_team["research"]["spend"]) == pytest.approx(
        runs_cost["research"], abs=MONEY_TOL
    )
    total = sum(_number(r["spend"]) for r in by_team.values())
    assert total == pytest.approx(sum(bill.values()), abs=MONEY_TOL * len(by_team))


def test_explorer_filter_through_the_ui(
    page: Any, pages: list[str], app_home: Path, artifacts: Path
) -> None:
    """The Cost explorer's provider filter, picked with the mouse in the Filters expander:
    `provider=gcp` goes to the URL, the table (grouped by team) narrows to the teams with runs
    on GKE (data, research, serving) and (idle), each team's GPU-node cost is its GKE runs' cost
    in the ground truth, and the spend shown is GCP's bill (9,344.16)."""
    truth = _truth(app_home)
    gcp_bill = float(truth["bill_totals"]["gcp"]["effective_cost"])
    gke_runs = _runs_cost_by_team(truth, provider="gcp")
    assert load(page, _page_of(pages, "costs")).ok
    every_team = {r["team"] for r in _shown_table(page, {"spend", "share"})}

    page.locator('[data-testid="stExpander"] summary', has_text="Filters").click()
    _choose(page, "costs_filter_provider", "gcp")
    _rerun_to(page, params={"provider": ["gcp"]}, text="Spend by team")
    by_team = {r["team"]: r for r in _shown_table(page, {"spend", "share"})}
    page.screenshot(path=str(artifacts / "costs-filter-gcp.png"), full_page=True)
    assert set(by_team) == set(gke_runs) | {"(idle)"} < every_team
    for team, cost in gke_runs.items():
        assert _number(by_team[team]["gpu_node_cost"]) == pytest.approx(cost, abs=MONEY_TOL)
    total = sum(_number(r["spend"]) for r in by_team.values())
    assert total == pytest.approx(gcp_bill, abs=MONEY_TOL * len(by_team))
    assert _metric_number(page, "Spend shown") == gcp_bill


def _run_view(page: Any, run_id: str) -> tuple[float, float, list[dict[str, str]]]:
    """What the open run's page shows: its cost and work lost (the tiles) and its GPUs."""
    from playwright.sync_api import expect

    main = page.locator('[data-testid="stMain"]')
    expect(main.get_by_role("heading", name=f"Run {run_id}")).to_be_visible()
    cost = _metric_number(page, "Run cost")
    lost = _metric_number(page, "Work lost")
    return cost, lost, _shown_table(page, {"host", "held_hours"})


def test_run_drill_down_through_the_ui(
    page: Any, browser: Any, pages: list[str], app_home: Path, artifacts: Path
) -> None:
    """On the Runs page, as a user: search "88000", open the XID 79 victim from the "Open a run"
    list; its page shows the ground truth's cost ($212.45) and work lost ($13.04) and its GPUs
    (as many rows as the run's GPUs, on its hosts); the URL carries `run` and `q`, and that URL
    opened in a fresh browser context shows the same run page."""
    truth = _truth(app_home)
    scenario = truth["scenarios"]["checkpointed_failure"]
    run_id = scenario["run_id"]  # slurm:onprem:88000:1
    run = next(r for r in truth["runs"] if r["run_id"] == run_id)
    job = str(run["job_id"])
    assert load(page, _page_of(pages, "runs")).ok

    search = _widget(page, "runs_q").locator("input")
    search.fill(job)
    search.press("Enter")
    _rerun_to(page, params={"q": [job]}, text="Open a run")
    listed = [r["run_id"] for r in _shown_table(page, {"run_id", "job_name"})]
    assert run_id in listed and all(f":{job}:" in r for r in listed), listed

    _choose(page, "runs_open", run_id)
    _rerun_to(page, params={"q": [job], "run": [run_id]}, text="Cost breakdown")
    cost, lost, gpus = _run_view(page, run_id)
    page.screenshot(path=str(artifacts / "run-page.png"), full_page=True)
    assert cost == scenario["cost"] and lost == scenario["lost_work_cost"]
    assert len(gpus) == run["gpus"] and {g["host"] for g in gpus} == set(run["hosts"])

    link = page.url
    context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
    context.add_init_script(NO_SAVE_PICKER)
    try:
        fresh = context.new_page()
        assert load(fresh, link).ok
        assert parse_qs(urlsplit(fresh.url).query).get("run") == [run_id]
        assert _run_view(fresh, run_id) == (cost, lost, gpus)
        fresh.screenshot(path=str(artifacts / "run-page-from-link.png"), full_page=True)
    finally:
        context.close()
