"""The analyst notebooks (notebooks/*.ipynb) are stored without outputs, run top to bottom
against a real pipeline output (the session fleet `pipeline_home`) and their key figures equal
the fleet's ground truth (ground_truth.json, written by the generator): the idle cost by cause
and team and the longest idle allocation (the notebook left open over the weekend), PUE per site
and day, GPU energy per team. The forecast review runs on a snapshot without the forecast marts
(and says so) and on a copy with hand-made `fct_forecast` / `fct_capacity` rows.
(cost_per_run is covered by tests/test_notebook.py.)
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import duckdb
import nbformat
import pytest
from nbclient import NotebookClient

pytestmark = pytest.mark.warehouse

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
MONEY_TOL = 0.01  # reporting currency: the marts hold decimal(18,6) rows summed by the hundred
HOURS_TOL = 0.01  # GPU-hours
KWH_TOL = 0.01  # GPU energy per team, kWh
PUE_TOL = 1e-6
CAUSES = ("unallocated", "allocated_idle", "down")


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", sorted(NOTEBOOKS.glob("*.ipynb")), ids=lambda p: Path(p).stem)
def test_stored_without_outputs(path: Path) -> None:
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    assert any(c.cell_type == "markdown" for c in nb.cells), "a notebook tells its story"
    for cell in _code_cells(nb):
        assert cell.get("outputs") == [], f"{path.name}: clear the outputs before committing"
        assert cell.get("execution_count") is None, f"{path.name}: clear the execution counts"


def test_every_issue_notebook_is_there() -> None:
    names = {p.stem for p in NOTEBOOKS.glob("*.ipynb")}
    assert {"cost_per_run", "idle_investigation", "forecast_review", "energy_and_pue"} <= names


def execute(name: str, home: Path) -> nbformat.NotebookNode:
    """Run notebooks/NAME.ipynb top to bottom with FLEETLEDGER_HOME=home; raises on an error."""
    path = NOTEBOOKS / f"{name}.ipynb"
    nb = nbformat.read(path, as_version=4)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("FLEETLEDGER_HOME", str(home))  # the kernel inherits it
        client = NotebookClient(
            nb, kernel_name="python3", timeout=300, resources={"metadata": {"path": str(NOTEBOOKS)}}
        )
        client.execute()  # raises CellExecutionError, naming the cell, on the first error
    return nb


def stream_text(nb: nbformat.NotebookNode) -> str:
    return "".join(
        out.get("text", "")
        for cell in _code_cells(nb)
        for out in cell.get("outputs", [])
        if out.get("output_type") == "stream"
    )


def summary(nb: nbformat.NotebookNode) -> dict[str, Any]:
    cells = [c for c in _code_cells(nb) if "summary" in c.get("metadata", {}).get("tags", [])]
    assert len(cells) == 1, "the notebook needs exactly one cell tagged `summary`"
    text = "".join(o.get("text", "") for o in cells[0].outputs if o.output_type == "stream")
    return json.loads(text)


def _truth(home: Path) -> dict[str, Any]:
    return json.loads((home / "ground_truth.json").read_text())


# --------------------------------------------------------------------------- idle_investigation


@pytest.fixture(scope="module")
def idle_nb(pipeline_home: Path) -> nbformat.NotebookNode:
    return execute("idle_investigation", pipeline_home)


def test_idle_notebook_checks_pass(idle_nb: nbformat.NotebookNode) -> None:
    assert "all idle cuts add up to the totals per cause" in stream_text(idle_nb)


def test_idle_cost_by_cause_matches_ground_truth(
    idle_nb: nbformat.NotebookNode, pipeline_home: Path
) -> None:
    got = summary(idle_nb)
    # expected: the generator's idle GPU-hours and cost per day and cause, summed over the days
    hours: dict[str, float] = defaultdict(float)
    cost: dict[str, float] = defaultdict(float)
    for row in _truth(pipeline_home)["idle_by_day_cause"]:
        hours[row["cause"]] += float(row["gpu_hours"])
        cost[row["cause"]] += float(row["cost"])
    for cause in CAUSES:
        assert got["idle_cost_by_cause"][cause] == pytest.approx(cost[cause], abs=MONEY_TOL)
        assert got["idle_gpu_hours_by_cause"][cause] == pytest.approx(hours[cause], abs=HOURS_TOL)
    assert got["idle_cost"] == pytest.approx(sum(cost.values()), abs=MONEY_TOL)


def test_idle_allocated_cost_by_team_matches_ground_truth(
    idle_nb: nbformat.NotebookNode, pipeline_home: Path
) -> None:
    # expected: each team's runs' allocated-idle cost (ground truth per run), summed per team
    expected: dict[str, float] = defaultdict(float)
    for run in _truth(pipeline_home)["runs"]:
        expected[run["team"]] += float(run["allocated_idle_cost"])
    got = summary(idle_nb)["allocated_idle_cost_by_team"]
    expected = {t: c for t, c in expected.items() if c > MONEY_TOL}
    assert set(got) >= set(expected)
    for team, cost in expected.items():
        assert got[team] == pytest.approx(cost, abs=MONEY_TOL), team


def test_longest_idle_allocation_is_the_weekend_notebook(
    idle_nb: nbformat.NotebookNode, pipeline_home: Path
) -> None:
    truth = _truth(pipeline_home)
    scenario = truth["scenarios"]["idle_notebook"]  # jupyter-alice, open over the weekend
    by_id = {r["run_id"]: r for r in truth["runs"]}
    most_idle = max(truth["runs"], key=lambda r: float(r["allocated_idle_seconds"]))
    assert most_idle["run_id"] == scenario["run_id"]  # the fleet's story: it idles the most
    top = summary(idle_nb)["longest_idle"]
    run = by_id[scenario["run_id"]]
    assert top["run_id"] == scenario["run_id"]
    assert top["team"] == run["team"]
    assert top["allocated_idle_gpu_hours"] == pytest.approx(
        scenario["allocated_idle_seconds"] / 3600, abs=HOURS_TOL
    )
    assert top["allocated_idle_cost"] == pytest.approx(run["allocated_idle_cost"], abs=MONEY_TOL)
    assert top["cost"] == pytest.approx(run["cost"], abs=MONEY_TOL)


# --------------------------------------------------------------------------- energy_and_pue


@pytest.fixture(scope="module")
def energy_nb(pipeline_home: Path) -> nbformat.NotebookNode:
    return execute("energy_and_pue", pipeline_home)


def test_energy_notebook_checks_pass(energy_nb: nbformat.NotebookNode) -> None:
    assert "energy and PUE cuts agree" in stream_text(energy_nb)


def test_pue_per_site_matches_ground_truth(
    energy_nb: nbformat.NotebookNode, pipeline_home: Path
) -> None:
    got = summary(energy_nb)
    truth = _truth(pipeline_home)["pue"]  # per site and day: facility_kwh, it_kwh, pue
    daily = {(r["site"], r["day"]): r for r in got["pue_daily"]}
    assert set(daily) == {(r["site"], r["day"]) for r in truth}
    for exp in truth:
        row = daily[(exp["site"], exp["day"])]
        assert row["pue"] == pytest.approx(exp["pue"], abs=PUE_TOL)
        assert row["facility_kwh"] == pytest.approx(exp["facility_kwh"], rel=1e-6)
        assert row["it_kwh"] == pytest.approx(exp["it_kwh"], rel=1e-6)
    # the window's PUE per site: facility kWh over IT kWh of all its days (not a mean of ratios)
    for site in {r["site"] for r in truth}:
        fac = sum(r["facility_kwh"] for r in truth if r["site"] == site)
        it = sum(r["it_kwh"] for r in truth if r["site"] == site)
        assert got["pue_by_site"][site] == pytest.approx(fac / it, abs=PUE_TOL)


def test_energy_per_team_matches_ground_truth(
    energy_nb: nbformat.NotebookNode, pipeline_home: Path
) -> None:
    truth = _truth(pipeline_home)
    # expected: the generator's GPU energy of the seconds each run held (Wh), summed per team
    expected: dict[str, float] = defaultdict(float)
    for run in truth["runs"]:
        expected[run["team"]] += float(run["energy_wh"]) / 1000
    got = summary(energy_nb)
    assert set(got["energy_kwh_by_team"]) == set(expected)
    for team, kwh in expected.items():
        assert got["energy_kwh_by_team"][team] == pytest.approx(kwh, abs=KWH_TOL), team
    # and all GPU energy: the generator's per GPU and day
    fleet_kwh = sum(float(d["energy_wh"]) for d in truth["gpu_days"]) / 1000
    assert got["gpu_energy_kwh"] == pytest.approx(fleet_kwh, abs=KWH_TOL)


# --------------------------------------------------------------------------- forecast_review


def _copy_warehouse(home: Path, dest: Path) -> Path:
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(home / "warehouse.duckdb", dest / "warehouse.duckdb")
    shutil.copy2(home / "fleetledger.yml", dest / "fleetledger.yml")
    return dest


def _drop(con: duckdb.DuckDBPyConnection, name: str) -> None:
    kinds = con.execute(
        """
        select 'table' from duckdb_tables() where schema_name = 'main' and table_name = ?
        union all
        select 'view' from duckdb_views() where schema_name = 'main' and view_name = ?
        """,
        [name, name],
    ).fetchall()
    for (kind,) in kinds:
        con.execute(f"drop {kind} main.{name}")


def test_forecast_review_without_forecast_marts(pipeline_home: Path, tmp_path: Path) -> None:
    home = _copy_warehouse(pipeline_home, tmp_path / "home")
    with duckdb.connect(str(home / "warehouse.duckdb")) as con:
        for name in ("fct_forecast", "fct_capacity"):
            _drop(con, name)
    nb = execute("forecast_review", home)
    assert "not in this snapshot: fct_forecast, fct_capacity" in stream_text(nb)
    got = summary(nb)
    assert got["forecast_available"] is False and got["capacity_available"] is False
    assert got["models"] == [] and got["horizon"] == {} and got["runway"] == {}


# Hand-made forecast rows: `spend` and `gpu_hours` for scope `total`, trained through
# 2026-10-04, three actual days (10-02..10-04) and three forecast days (10-05..10-07).
FORECAST_COLUMNS = (
    "series varchar, scope varchar, day date, yhat double, lo_80 double, hi_80 double, "
    "lo_95 double, hi_95 double, lo_99 double, hi_99 double, model varchar, "
    "backtest_error double, backtest_coverage_80 double, backtest_coverage_95 double, "
    "insufficient_history boolean, trained_through date, actual double, horizon integer, "
    "cum_yhat double, cum_lo_80 double, cum_hi_80 double"
)


def _forecast_rows() -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    plan = {
        # series: (model, backtest_error, coverage_80, coverage_95, actuals, forecasts)
        "spend": ("auto_ets", 0.12, 0.75, 0.9, [900.0, 950.0, 1000.0], [1000.0, 1100.0, 1200.0]),
        "gpu_hours": (
            "seasonal_naive",
            0.3,
            0.8,
            1.0,
            [400.0, 410.0, 420.0],
            [430.0, 440.0, 450.0],
        ),
    }
    for series, (model, err, c80, c95, actuals, forecasts) in plan.items():
        cum = cum_lo = cum_hi = 0.0
        for i, value in enumerate([*actuals, *forecasts]):
            future = i >= len(actuals)
            lo80, hi80 = (value * 0.9, value * 1.1) if future else (value, value)
            if future:
                cum, cum_lo, cum_hi = cum + value, cum_lo + lo80, cum_hi + hi80
            rows.append(
                (
                    series,
                    "total",
                    f"2026-10-0{2 + i}",
                    value,
                    lo80,
                    hi80,
                    value * 0.8,
                    value * 1.2,
                    value * 0.7,
                    value * 1.3,
                    model,
                    err,
                    c80,
                    c95,
                    False,
                    "2026-10-04",
                    None if future else value,
                    i - len(actuals) + 1 if future else 0,
                    cum if future else None,
                    cum_lo if future else None,
                    cum_hi if future else None,
                )
            )
    return rows


def test_forecast_review_with_forecast_marts(pipeline_home: Path, tmp_path: Path) -> None:
    home = _copy_warehouse(pipeline_home, tmp_path / "home")
    with duckdb.connect(str(home / "warehouse.duckdb")) as con:
        for name in ("fct_forecast", "fct_capacity"):
            _drop(con, name)
        con.execute(f"create table main.fct_forecast ({FORECAST_COLUMNS})")
        con.executemany(
            "insert into main.fct_forecast values (" + ", ".join(["?"] * 21) + ")",
            _forecast_rows(),
        )
        con.execute(
            "create table main.fct_capacity (scope varchar, day date, fleet_gpus integer, "
            "peak_gpus_demand double, peak_gpus_hi_80 double, runway_day date)"
        )
        # total: 64 GPUs; the 80 % upper demand passes 64 on 10-06 -> runway 2026-10-06.
        # site:dc1: 32 GPUs, demand never above -> no runway in the horizon.
        con.executemany(
            "insert into main.fct_capacity values (?, ?, ?, ?, ?, ?)",
            [
                ("total", "2026-10-04", 64, 50.0, 50.0, "2026-10-06"),
                ("total", "2026-10-05", 64, 58.0, 63.0, "2026-10-06"),
                ("total", "2026-10-06", 64, 62.0, 70.0, "2026-10-06"),
                ("site:dc1", "2026-10-04", 32, 20.0, 20.0, None),
                ("site:dc1", "2026-10-05", 32, 21.0, 25.0, None),
            ],
        )
    nb = execute("forecast_review", home)
    assert "fct_forecast and fct_capacity are in this snapshot" in stream_text(nb)
    got = summary(nb)
    assert got["forecast_available"] is True and got["missing_marts"] == []
    models = {(m["series"], m["scope"]): m for m in got["models"]}
    assert models[("spend", "total")] == {
        "series": "spend",
        "scope": "total",
        "model": "auto_ets",
        "backtest_error": 0.12,
        "backtest_coverage_80": 0.75,
        "horizon_days": 3,  # 10-05, 10-06, 10-07 are after trained_through 10-04
    }
    assert models[("gpu_hours", "total")]["horizon_days"] == 3
    # spend after 10-04: 1000 + 1100 + 1200 = 3300; 80 % bounds 0.9x and 1.1x: 2970 and 3630
    assert got["horizon"]["spend"] == {
        "days": 3,
        "yhat": pytest.approx(3300.0),
        "lo_80": pytest.approx(2970.0),
        "hi_80": pytest.approx(3630.0),
    }
    # gpu_hours after 10-04: 430 + 440 + 450 = 1320
    assert got["horizon"]["gpu_hours"]["yhat"] == pytest.approx(1320.0)
    assert got["runway"] == {"site:dc1": None, "total": "2026-10-06"}
