"""Every page of the cost explorer renders a real pipeline output (the shared `pipeline_home`
fleet) and shows the figures the fleet's ground truth fixes; the forecast, budget and alert
pages are checked on hand-made rows of those marts written into a copy of the warehouse, and on
a copy without them (a "run the pipeline" note, no exception)."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
from collections import defaultdict
from collections.abc import Iterator
from datetime import date
from io import StringIO
from pathlib import Path
from typing import Any
from unittest.mock import patch

import duckdb
import pandas as pd
import pytest
import streamlit.testing.v1.app_test as app_test_module
from streamlit.runtime.memory_media_file_storage import MemoryMediaFileStorage
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "app" / "main.py"
TIMEOUT = 120
MONEY_TOL = 0.01
CONTRACT_MARTS = (
    "fct_forecast",
    "fct_capacity",
    "fct_budget_status",
    "fct_alerts",
    "fct_alert_deliveries",
)
PAGES = {
    "overview": "Overview",
    "costs": "Cost explorer",
    "runs": "Runs",
    "idle": "Idle and waste",
    "health": "Fleet health",
    "energy": "Energy",
    "economics": "Inference economics",
    "forecasts": "Forecasts and capacity",
    "budgets": "Budgets and alerts",
    "data_health": "Data health",
}

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _truth(home: Path) -> dict[str, Any]:
    return json.loads((home / "ground_truth.json").read_text())


@pytest.fixture(autouse=True)
def _home_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """A test's pages read FLEETLEDGER_HOME on every rerun, so `_page` sets it for the rest of
    the test; the value from before the test is put back after it."""
    monkeypatch.delenv("FLEETLEDGER_HOME", raising=False)
    yield monkeypatch


def _page(home: Path, page: str, params: dict[str, str | list[str]] | None = None) -> AppTest:
    os.environ["FLEETLEDGER_HOME"] = str(home)  # restored by `_home_env`
    at = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT)
    for name, value in (params or {}).items():
        at.query_params[name] = value
    at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _exact(at: AppTest, label: str) -> float:
    """The exact figure of a money tile: its help starts 'Exact: 1,234.56 USD.'"""
    helps = [m.proto.help for m in at.metric if m.label == label]
    assert len(helps) == 1, f"{label!r} not shown once: {[m.label for m in at.metric]}"
    found = re.match(r"Exact: (-?[\d,]+\.\d\d) ", helps[0])
    assert found, helps[0]
    return float(found.group(1).replace(",", ""))


def _metric(at: AppTest, label: str) -> str:
    values = [m.value for m in at.metric if m.label == label]
    assert len(values) == 1, f"{label!r} not shown once: {[m.label for m in at.metric]}"
    return values[0]


# the tables the tests read, told apart by columns only they have (AppTest keeps no table keys)
TABLES: dict[str, tuple[set[str], set[str]]] = {
    "idle_longest": ({"allocated_idle_gpu_hours", "idle_share"}, set()),
    "idle_by_team": ({"team", "cause", "cost"}, set()),
    "run_gpus": ({"held_hours", "busy_share"}, set()),
    "run_breakdown": ({"part", "cost"}, set()),
    "runs_table": ({"run_id", "job_name", "failure_class", "lost_work_cost"}, set()),
    "costs_table": ({"spend", "share"}, set()),
    "health_xids": ({"xid", "events"}, set()),
    "health_stragglers": ({"gpu_uuid", "mean_shortfall"}, set()),
    "energy_pue": ({"site", "pue"}, set()),
    "economics_daily": ({"model_name", "cost_per_1m_tokens", "ttft_p95_s"}, set()),
    "economics_recs": ({"recommendation_id", "monthly_savings"}, set()),
    "budgets_periods": ({"budget", "used_share"}, {"status"}),
    "alerts_history": ({"alert_id", "sent", "failed"}, set()),
    "fc_runway": ({"runway_day", "peak_gpus_hi_80_max"}, set()),
    "dh_quarantine": ({"reason", "rows", "partitions"}, set()),
}


def _table(at: AppTest, name: str) -> pd.DataFrame:
    has, lacks = TABLES[name]
    frames = [
        d.value
        for d in at.dataframe
        if has <= set(d.value.columns) and not lacks & set(d.value.columns)
    ]
    assert len(frames) == 1, f"{name}: {len(frames)} tables match"
    return frames[0]


def _info(at: AppTest) -> str:
    return " ".join(i.value for i in at.info)


def _copy_home(src: Path, dst: Path) -> Path:
    dst.mkdir(parents=True, exist_ok=True)
    for name in ("warehouse.duckdb", "fleetledger.yml", "ground_truth.json"):
        shutil.copyfile(src / name, dst / name)
    return dst


@pytest.mark.parametrize("page", list(PAGES))
def test_every_page_renders(pipeline_home: Path, page: str) -> None:
    at = _page(pipeline_home, page)
    assert [t.value for t in at.title] == [PAGES[page]]
    # no figure fell back to "not available"; the test fleet's 3 days are under
    # forecast.min_history_days (21), so the forecast page says its forecast is a naive one
    naive = "Insufficient history: this forecast is a naive one."
    expected = [naive] if page == "forecasts" else []
    assert [w.value for w in at.warning] == expected


def test_overview_money_is_compact_with_the_exact_figure(pipeline_home: Path) -> None:
    at = _page(pipeline_home, "overview")
    # every bill line of the 3 days: 22,441.88 (aws) + 9,344.16 (gcp) + 3,492.03 (onprem)
    total = sum(p["effective_cost"] for p in _truth(pipeline_home)["bill_totals"].values())
    assert _metric(at, "Effective spend — total") == f"${total / 1000:.1f}k"  # $35.3k
    assert _exact(at, "Effective spend — total") == pytest.approx(total, abs=MONEY_TOL)


def test_idle_page_shows_the_idle_notebook(pipeline_home: Path) -> None:
    truth = _truth(pipeline_home)
    notebook = truth["scenarios"]["idle_notebook"]["run_id"]
    run = next(r for r in truth["runs"] if r["run_id"] == notebook)
    at = _page(pipeline_home, "idle")
    # the notebook left on over the weekend: 784,316 allocated-idle GPU-seconds, $1,765.53
    label = f"Longest idle allocation — {notebook}"
    assert _exact(at, label) == pytest.approx(run["allocated_idle_cost"], abs=MONEY_TOL)
    longest = _table(at, "idle_longest")
    assert longest["run_id"].iloc[0] == notebook
    assert longest["allocated_idle_gpu_hours"].iloc[0] == pytest.approx(
        truth["scenarios"]["idle_notebook"]["allocated_idle_seconds"] / 3600, abs=1e-6
    )
    assert longest["team"].iloc[0] == run["team"]
    by_team = _table(at, "idle_by_team")
    idle = defaultdict(float)
    for row in truth["idle_by_day_cause"]:
        idle[row["cause"]] += row["cost"]
    assert by_team.groupby("cause")["cost"].sum().to_dict() == pytest.approx(
        dict(idle), abs=MONEY_TOL
    )


def test_run_page_from_a_link(pipeline_home: Path) -> None:
    scenario = _truth(pipeline_home)["scenarios"]["checkpointed_failure"]
    run = next(r for r in _truth(pipeline_home)["runs"] if r["run_id"] == scenario["run_id"])
    at = _page(pipeline_home, "runs", {"run": scenario["run_id"]})
    assert at.selectbox(key="runs_open").value == scenario["run_id"]
    # the XID 79 victim: $212.45, failed (infra) 1,917.6 s after its last checkpoint: $13.04 lost
    assert _exact(at, "Run cost") == pytest.approx(scenario["cost"], abs=MONEY_TOL)
    assert _exact(at, "Work lost") == pytest.approx(scenario["lost_work_cost"], abs=MONEY_TOL)
    assert _metric(at, "Failure class") == run["failure_class"] == "infra"
    gpus = _table(at, "run_gpus")
    assert len(gpus) == run["gpus"] and set(gpus["host"]) == set(run["hosts"])
    parts = _table(at, "run_breakdown").set_index("part")["cost"]
    assert parts["busy"] + parts["allocated-idle"] == pytest.approx(run["cost"], abs=MONEY_TOL)
    assert parts["allocated-idle"] == pytest.approx(run["allocated_idle_cost"], abs=MONEY_TOL)
    assert len(at.get("plotly_chart")) == 2  # cost breakdown, utilisation over time


def test_runs_search_and_sort(pipeline_home: Path) -> None:
    truth = _truth(pipeline_home)
    at = _page(pipeline_home, "runs", {"q": "88000", "sort": "lost_work_cost"})
    listed = _table(at, "runs_table")
    assert listed["run_id"].tolist() == [
        r["run_id"] for r in truth["runs"] if ":88000:" in r["run_id"]
    ]
    at.selectbox(key="runs_open").set_value("slurm:onprem:88000:1").run()
    assert at.query_params.get("run") == "slurm:onprem:88000:1"
    assert at.query_params.get("q") == "88000"


def _download(at_run: Any) -> tuple[AppTest, str]:
    storage = MemoryMediaFileStorage("/mock/media")
    with patch.object(app_test_module, "MemoryMediaFileStorage", lambda prefix: storage):
        at = at_run()
    url = at.get("download_button")[0].proto.url
    return at, storage.get_file(url.rsplit("/", 1)[-1]).content.decode()


def test_explorer_team_spend_and_csv(pipeline_home: Path) -> None:
    truth = _truth(pipeline_home)
    at, csv = _download(lambda: _page(pipeline_home, "costs"))
    table = _table(at, "costs_table")
    assert at.selectbox(key="costs_group").value == "team"
    by_team = table.set_index("team")
    # a team's GPU-node cost is its runs' cost (ground truth: GPU-seconds x the node's rate)
    runs_cost: dict[str, float] = defaultdict(float)
    for r in truth["runs"]:
        runs_cost[r["team"]] += r["cost"]
    for team, cost in runs_cost.items():
        assert by_team.loc[team, "gpu_node_cost"] == pytest.approx(cost, abs=MONEY_TOL)
    # idle shown separately: the table sums to the bill (35,278.06)
    total = sum(p["effective_cost"] for p in truth["bill_totals"].values())
    assert table["spend"].sum() == pytest.approx(total, abs=MONEY_TOL)
    assert "(idle)" in by_team.index
    # the CSV is exactly the table
    pd.testing.assert_frame_equal(pd.read_csv(StringIO(csv)), table, check_dtype=False)

    at.radio(key="costs_idle").set_value("shared").run()
    shared = _table(at, "costs_table").set_index("team")
    assert "(idle)" not in shared.index
    assert shared["spend"].sum() == pytest.approx(total, abs=MONEY_TOL)  # shared, not lost
    assert at.query_params.get("idle") == "shared"


def test_explorer_link_opens_the_same_view(pipeline_home: Path) -> None:
    at = _page(pipeline_home, "costs", {"group": "provider", "idle": "shared", "team": "research"})
    assert at.selectbox(key="costs_group").value == "provider"
    assert at.radio(key="costs_idle").value == "shared"
    assert at.multiselect(key="costs_filter_team").value == ["research"]
    table = _table(at, "costs_table")
    team_view = _table(_page(pipeline_home, "costs", {"idle": "shared"}), "costs_table")
    research = team_view.set_index("team").loc["research", "spend"]
    assert table["spend"].sum() == pytest.approx(research, abs=1e-6)
    assert set(table["provider"]) <= {"aws", "gcp", "onprem"}

    # the date range comes from the link too: the fleet's last day only
    last = max(r["day"] for r in _truth(pipeline_home)["idle_by_day_cause"])
    day_view = _page(pipeline_home, "costs", {"start": last, "end": last})
    assert day_view.date_input[0].value == (date.fromisoformat(last),) * 2
    assert day_view.query_params.get("start") == last
    # that day's GPU-node bill (ground truth per day and provider) is the table's GPU-node cost
    node_bill = sum(
        r["cost"]
        for r in _truth(pipeline_home)["gpu_node_cost_by_day_provider"]
        if r["day"] == last
    )
    day_table = _table(day_view, "costs_table")
    assert day_table["gpu_node_cost"].sum() == pytest.approx(node_bill, abs=MONEY_TOL)


def test_health_and_energy_pages(pipeline_home: Path) -> None:
    truth = _truth(pipeline_home)
    health = _page(pipeline_home, "health")
    downtime = sum(r["downtime_seconds"] for r in truth["health_by_day_host"]) / 3600
    assert float(_metric(health, "Node downtime (h)")) == pytest.approx(downtime, abs=0.05)
    xids = _table(health, "health_xids").set_index("xid")
    outage = truth["scenarios"]["xid79_outage"]
    assert bool(xids.loc[outage["xid"], "is_fatal"])
    stragglers = _table(health, "health_stragglers")
    assert set(stragglers["gpu_uuid"]) == {s["gpu_uuid"] for s in truth["stragglers"]}

    energy = _page(pipeline_home, "energy")
    pue = _table(energy, "energy_pue")
    shown = {(r.site, pd.Timestamp(r.day).date().isoformat()): r.pue for r in pue.itertuples()}
    expected = {(p["site"], p["day"]): p["pue"] for p in truth["pue"]}
    assert shown == pytest.approx(expected, abs=1e-3)


def test_economics_page(pipeline_home: Path) -> None:
    truth = _truth(pipeline_home)
    at = _page(pipeline_home, "economics")
    # per service and day, all replicas together: tokens from the truth; cost per 1M tokens =
    # the replicas' cost that day (their GPU-seconds that day x their run's flat GPU rate) x 1e6
    # / their tokens
    runs = {r["run_id"]: r for r in truth["runs"]}
    want: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for t in truth["inference_days"]:
        run = runs[t["run_id"]]
        want[t["day"]][0] += t["prompt_tokens"] + t["generation_tokens"]
        want[t["day"]][1] += t["gpu_seconds"] * run["cost"] / run["gpu_seconds"]
    daily = _table(at, "economics_daily")
    shown = {pd.Timestamp(r.day).date().isoformat(): r for r in daily.itertuples()}
    assert set(shown) == set(want) and len(daily) == len(want)  # one service
    for day, (tokens, cost) in want.items():
        assert shown[day].tokens == tokens
        assert shown[day].cost_per_1m_tokens == pytest.approx(cost * 1e6 / tokens, rel=1e-9)
    # the recommendations, largest savings first; the tile is their sum
    recs = _table(at, "economics_recs")
    assert list(recs["monthly_savings"]) == sorted(recs["monthly_savings"], reverse=True)
    assert set(recs["kind"]) == {"release_idle", "commitment", "release_capacity"}
    assert _exact(at, "Monthly savings") == pytest.approx(
        round(recs["monthly_savings"].sum(), 2), abs=MONEY_TOL
    )
    # the kind filter comes from the URL
    only = _table(_page(pipeline_home, "economics", {"rec_kind": "commitment"}), "economics_recs")
    assert list(only["kind"]) == ["commitment"]


@pytest.fixture(scope="module")
def without_contract_marts(pipeline_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = _copy_home(pipeline_home, tmp_path_factory.mktemp("no_forecasts"))
    with duckdb.connect(str(home / "warehouse.duckdb")) as con:
        for mart in CONTRACT_MARTS:
            con.execute(f"drop table if exists main.{mart}")
            con.execute(f"drop view if exists main.{mart}")
    return home


@pytest.mark.parametrize("page", ["overview", "forecasts", "budgets"])
def test_pages_without_forecasts_or_alerts(without_contract_marts: Path, page: str) -> None:
    at = _page(without_contract_marts, page)
    assert [t.value for t in at.title] == [PAGES[page]]
    assert "run the pipeline" in _info(at)


# hand-made rows of the contract marts (DESIGN.md "Forecasts, budgets and alerts")
FORECAST_DAYS = pd.date_range("2026-10-02", periods=6, freq="D").date


@pytest.fixture(scope="module")
def contract_home(pipeline_home: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    home = _copy_home(pipeline_home, tmp_path_factory.mktemp("contract_marts"))
    with duckdb.connect(str(home / "warehouse.duckdb")) as con:
        for mart in CONTRACT_MARTS:
            con.execute(f"drop table if exists main.{mart}")
        con.execute(
            """
            create table main.fct_budget_status as
            select * from (values
                ('research-monthly', date '2026-10-01', 5000.0, 'USD', 6250.0, date '2026-10-04',
                 9100.0, 8700.0, 9600.0, 1.25, [0.5, 0.8, 1.0], [0.5, 0.8, 1.0]),
                ('research-monthly', date '2026-09-01', 5000.0, 'USD', 3000.0, date '2026-09-30',
                 3000.0, 3000.0, 3000.0, 0.6, [0.5], [0.5]),
                ('serving-monthly', date '2026-10-01', 20000.0, 'USD', 4000.0, date '2026-10-04',
                 15000.0, 13000.0, 17000.0, 0.2, [], [])
            ) as t(budget, period_start, amount, currency, spend_to_date, data_through,
                   forecast_period_end, forecast_lo_80, forecast_hi_80, used_share,
                   thresholds_crossed_actual, thresholds_crossed_forecast)
            """
        )
        con.execute(
            """
            create table main.fct_alerts as
            select * from (values
                ('a1', 'budget:research-monthly:actual', 'research-monthly', 'research',
                 '2026-10-01', 1.0, 1250.0, 'over budget (spend through 2026-10-04)',
                 timestamptz '2026-10-04 06:00:00+00', cast(null as timestamptz)),
                ('a2', 'gpu_down:gpu_down-1', 'dgx-03/3', null, '2026-10-03', 4.0, 180.0,
                 'GPU down 5.3 h', timestamptz '2026-10-03 16:00:00+00',
                 timestamptz '2026-10-04 00:00:00+00')
            ) as t(alert_id, rule, subject, team, period, threshold, amount, message,
                   first_raised_at, resolved_at)
            """
        )
        con.execute(
            """
            create table main.fct_alert_deliveries as
            select * from (values
                ('a1', 'finops-slack', 1, timestamptz '2026-10-04 06:00:00+00', 'failed',
                 'HTTP 500 from the webhook'),
                ('a1', 'finops-slack', 2, timestamptz '2026-10-04 07:00:00+00', 'sent', null),
                ('a2', 'hooks', 1, timestamptz '2026-10-03 16:00:00+00', 'sent', null)
            ) as t(alert_id, channel, attempt, attempted_at, status, error)
            """
        )
        con.execute(
            """
            create table main.fct_forecast as
            select 'spend' as series, 'total' as scope, d.day,
                   case when d.i < 3 then 11000.0 + 100 * d.i end as actual,
                   11000.0 + 100 * d.i as yhat,
                   10500.0 + 100 * d.i as lo_80, 11500.0 + 100 * d.i as hi_80,
                   10000.0 + 100 * d.i as lo_95, 12000.0 + 100 * d.i as hi_95,
                   9500.0 + 100 * d.i as lo_99, 12500.0 + 100 * d.i as hi_99,
                   'AutoETS' as model, 0.125 as backtest_error, 0.8 as backtest_coverage_80,
                   0.95 as backtest_coverage_95, false as insufficient_history,
                   date '2026-10-04' as trained_through,
                   11000.0 * (d.i + 1) as cum_yhat, 10500.0 * (d.i + 1) as cum_lo_80,
                   11500.0 * (d.i + 1) as cum_hi_80, greatest(d.i - 2, 0) as horizon
            from (select unnest(?) as day, unnest(range(6)) as i) as d
            """,
            [list(FORECAST_DAYS)],
        )
        con.execute(
            """
            create table main.fct_capacity as
            select 'total' as scope, d.day, 80 as fleet_gpus, 60.0 + 5 * d.i as peak_gpus_demand,
                   64.0 + 5 * d.i as peak_gpus_hi_80,
                   date '2026-10-06' as runway_day
            from (select unnest(?) as day, unnest(range(6)) as i) as d
            """,
            [list(FORECAST_DAYS)],
        )
        con.execute(
            "insert into main.fct_quarantine (source, partition, reason, rows, files) "
            "values ('aws-cur', '2026-10', 'unparseable_cost', 3, 1), "
            "('slurm-onprem', '2026-10-03', 'bad_timestamp', 2, 1)"
        )
    yield home


def test_budget_status_of_the_over_budget_team(contract_home: Path) -> None:
    at = _page(contract_home, "budgets", {"budget": "research-monthly"})
    # 6,250 of 5,000: 125 % used -> over budget; serving 4,000 of 20,000 -> on track
    assert _exact(at, "research-monthly — over budget") == 6250.0
    assert _metric(at, "serving-monthly — on track") == "$4.0k of $20.0k"
    periods = _table(at, "budgets_periods")
    assert periods["period_start"].astype(str).tolist() == ["2026-10-01", "2026-09-01"]
    history = _table(at, "alerts_history").set_index("alert_id")
    # a1: one failed attempt then sent; a2: sent once
    assert history.loc["a1", ["deliveries", "sent", "failed"]].tolist() == [2, 1, 1]
    assert history.loc["a1", "last_error"] is None or pd.isna(history.loc["a1", "last_error"])
    assert history.loc["a2", ["deliveries", "sent", "failed"]].tolist() == [1, 1, 0]

    overview = _page(contract_home, "overview", {"alert": "a2"})  # as an alert message links
    assert "GPU down 5.3 h" in _info(overview) and "(resolved)" in _info(overview)
    assert _exact(overview, "Budget — research-monthly") == 6250.0
    assert _metric(overview, "Active alerts") == "1"  # a2 is resolved


def test_forecast_page_and_data_health(contract_home: Path) -> None:
    at = _page(contract_home, "forecasts")
    assert at.selectbox(key="fc_series").value == "spend"
    assert _metric(at, "Back-test error") == "12.5%"
    assert _metric(at, "Model") == "AutoETS"
    runway = _table(at, "fc_runway")
    assert pd.Timestamp(runway["runway_day"].iloc[0]).date().isoformat() == "2026-10-06"
    assert len(at.get("plotly_chart")) == 2  # history + forecast, capacity

    health = _page(contract_home, "data_health")
    assert _metric(health, "Quarantined rows") == "5"  # 3 + 2
    reasons = _table(health, "dh_quarantine")
    assert dict(zip(reasons["reason"], reasons["rows"], strict=True)) == {
        "unparseable_cost": 3,
        "bad_timestamp": 2,
    }


def test_spend_breakdown_reconciles_to_daily_spend(pipeline_home: Path) -> None:
    """fct_spend_breakdown summed over instance type, site, kind and user is fct_daily_spend
    (cost and shared idle, per day, team, provider and service, within 1e-6); fct_run_gpu_hours
    summed per run is fct_run_costs.cost."""
    with duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True) as con:
        worst = con.execute(
            """
            with b as (
                select day, team, provider, service, sum(cost) as cost,
                       sum(shared_idle_cost) as shared
                from main.fct_spend_breakdown group by all
            ),
            d as (
                select day, team, provider, service, sum(cost) as cost,
                       sum(shared_idle_cost) as shared
                from main.fct_daily_spend group by all
            )
            select count(*), max(abs(coalesce(b.cost, 0) - coalesce(d.cost, 0))),
                   max(abs(coalesce(b.shared, 0) - coalesce(d.shared, 0))),
                   count(*) filter (where b.day is null or d.day is null)
            from b full join d
              on b.day = d.day and b.team is not distinct from d.team
             and b.provider = d.provider and b.service = d.service
            """
        ).fetchone()
        runs = con.execute(
            """
            select count(*), max(abs(h.cost - c.cost))
            from (select run_id, sum(cost) as cost from main.fct_run_gpu_hours group by 1) h
            join main.fct_run_costs c using (run_id)
            """
        ).fetchone()
    assert worst is not None and runs is not None
    groups, cost_diff, shared_diff, unmatched = worst
    assert groups > 0 and unmatched == 0
    assert cost_diff < 1e-6 and shared_diff < 1e-6
    assert runs[0] > 0 and runs[1] < 1e-6


@pytest.mark.parametrize("mart", ["fct_spend_breakdown", "fct_run_gpu_hours"])
def test_explorer_marts_are_documented_column_by_column(pipeline_home: Path, mart: str) -> None:
    import yaml

    marts = yaml.safe_load((ROOT / "dbt_project" / "models" / "marts" / "marts.yml").read_text())
    model = next(m for m in marts["models"] if m["name"] == mart)
    with duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True) as con:
        columns = [r[0] for r in con.execute(f"describe main.{mart}").fetchall()]
    assert [c["name"] for c in model["columns"] if c.get("description")] == columns


def test_over_budget_team_on_the_fleet(pipeline_home: Path) -> None:
    """The fleet's config gives research a monthly budget under what its runs cost (the
    generator's over-budget team): the budgets page shows it over budget, its spend to date the
    ground truth's cost of research's runs (all in October; research has no other bill lines)."""
    import yaml

    cfg = yaml.safe_load((pipeline_home / "fleetledger.yml").read_text())
    budget = next(b for b in cfg["budgets"] if b.get("scope") == {"team": "research"})
    runs_cost = sum(r["cost"] for r in _truth(pipeline_home)["runs"] if r["team"] == "research")
    assert runs_cost > budget["amount"]  # e.g. 7,695.37 > 6,100
    at = _page(pipeline_home, "budgets")
    label = f"{budget['name']} — over budget"
    assert _exact(at, label) == pytest.approx(runs_cost, abs=MONEY_TOL)
