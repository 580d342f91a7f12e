"""The Streamlit cost explorer renders a real pipeline output and shows the right numbers."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections import defaultdict
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[1]
MAIN = ROOT / "app" / "main.py"
TIMEOUT = 120  # seconds per script run: the first one imports pandas, duckdb, altair
CAUSES = ("unallocated", "allocated_idle", "down")
# A displayed number equals the ground truth at the precision it is displayed with:
# GPU-hours with 1 decimal, money with 2 (plus slack for decimal(18,6) rounding of many rows).
HOURS_TOL = 0.05 + 1e-6
MONEY_TOL = 0.01

if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _ground_truth(home: Path) -> dict[str, Any]:
    return json.loads((home / "ground_truth.json").read_text())


def _run_app(home: Path, monkeypatch: pytest.MonkeyPatch) -> AppTest:
    monkeypatch.setenv("FLEETLEDGER_HOME", str(home))
    at = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _metric(at: AppTest, label: str) -> str:
    values = [m.value for m in at.metric if m.label == label]
    assert len(values) == 1, f"{label!r} not shown once; metrics: {[m.label for m in at.metric]}"
    return values[0]


def _exact(at: AppTest, label: str) -> float:
    """A money tile shows a compact figure ($10.8k); its help starts with the exact one."""
    helps = [m.proto.help for m in at.metric if m.label == label]
    assert len(helps) == 1, f"{label!r} not shown once"
    assert helps[0].startswith("Exact: "), helps[0]
    return _number(helps[0].removeprefix("Exact: "))


def _number(shown: str) -> float:
    """'1,234.56 USD' or '12.3' -> the number."""
    return float(shown.split()[0].replace(",", ""))


def _frame_with(at: AppTest, column: str) -> pd.DataFrame:
    frames = [df.value for df in at.dataframe if column in df.value.columns]
    assert frames, f"no table with a {column!r} column"
    return frames[0]


def _idle_truth(home: Path, days: set[str] | None = None) -> dict[str, tuple[float, float]]:
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in _ground_truth(home)["idle_by_day_cause"]:
        if days is None or row["day"] in days:
            totals[row["cause"]][0] += float(row["gpu_hours"])
            totals[row["cause"]][1] += float(row["cost"])
    return {cause: (totals[cause][0], totals[cause][1]) for cause in CAUSES}


@pytest.fixture(scope="module")
def overview(pipeline_home: Path) -> AppTest:
    with pytest.MonkeyPatch.context() as mp:
        return _run_app(pipeline_home, mp)


def test_overview_renders(overview: AppTest) -> None:
    assert [t.value for t in overview.title] == ["Overview"]
    labels = {m.label for m in overview.metric}
    assert {"Effective spend — total", "GPU-hours paid", "Fleet utilisation"} <= labels
    assert {f"Idle GPU-hours — {c}" for c in CAUSES} <= labels
    assert {f"Idle cost — {c}" for c in CAUSES} <= labels
    assert len(overview.date_input) == 1
    charts = overview.get("vega_lite_chart")
    assert len(charts) == 2  # daily spend, idle cost by cause and day
    pue = _frame_with(overview, "pue")
    assert list(pue.columns) == [
        "site",
        "day",
        "facility_kwh",
        "it_kwh",
        "pue",
        "it_energy_estimated",
    ]


@pytest.mark.parametrize("cause", CAUSES)
def test_idle_metrics_match_ground_truth(
    overview: AppTest, pipeline_home: Path, cause: str
) -> None:
    gpu_hours, cost = _idle_truth(pipeline_home)[cause]
    assert _number(_metric(overview, f"Idle GPU-hours — {cause}")) == pytest.approx(
        gpu_hours, abs=HOURS_TOL
    )
    assert _exact(overview, f"Idle cost — {cause}") == pytest.approx(cost, abs=MONEY_TOL)
    shown = _metric(overview, f"Idle cost — {cause}")  # compact: $10.8k, $845.20
    assert shown.startswith("$") and _number(shown.strip("$kMB")) == pytest.approx(
        cost / 1000 if cost >= 1000 else cost, abs=0.05 if cost >= 1000 else MONEY_TOL
    )


def test_top_runs_match_ground_truth(overview: AppTest, pipeline_home: Path) -> None:
    truth = sorted(
        ((float(r["cost"]), r["run_id"]) for r in _ground_truth(pipeline_home)["runs"]),
        reverse=True,
    )
    shown = _frame_with(overview, "run_id")
    assert {"team", "user_name", "kind", "state", "cost"} <= set(shown.columns)
    # the default range holds every run: ten rows, or every run that cost anything
    assert len(shown) == 10 or len(shown) >= sum(1 for c, _ in truth if c > 0)
    max_cost = truth[0][0]
    # ties (equal cost within a cent) may be ordered either way
    assert shown["run_id"].iloc[0] in {i for c, i in truth if c >= max_cost - MONEY_TOL}
    expected = [c for c, _ in truth[: len(shown)]]
    assert shown["cost"].tolist() == pytest.approx(expected, abs=MONEY_TOL)


def test_date_filter_narrows_the_figures(
    pipeline_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _run_app(pipeline_home, monkeypatch)
    days = sorted({row["day"] for row in _ground_truth(pipeline_home)["idle_by_day_cause"]})
    day = date.fromisoformat(days[-1])
    at.date_input[0].set_value((day, day)).run()
    assert not at.exception, [e.value for e in at.exception]
    truth = _idle_truth(pipeline_home, {days[-1]})
    for cause in CAUSES:
        assert _number(_metric(at, f"Idle GPU-hours — {cause}")) == pytest.approx(
            truth[cause][0], abs=HOURS_TOL
        )
    for frame in (d.value for d in at.dataframe if "pue" in d.value.columns):
        assert {pd.Timestamp(d).date() for d in frame["day"]} <= {day}


def test_missing_warehouse_shows_a_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLEETLEDGER_HOME", str(tmp_path))
    at = AppTest.from_file(str(MAIN), default_timeout=TIMEOUT)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    text = " ".join(i.value for i in at.info)
    assert "fleetledger demo" in text and "fleetledger run" in text
    assert str(tmp_path / "warehouse.duckdb") in text
    assert len(at.metric) == 0


def test_new_snapshot_is_picked_up(pipeline_home: Path, tmp_path: Path) -> None:
    """Queries are cached per snapshot (mtime, size): a republished file is read again."""
    from app import queries

    home = tmp_path / "home"
    home.mkdir()
    target = home / "warehouse.duckdb"
    shutil.copyfile(pipeline_home / "warehouse.duckdb", target)
    first, last = queries.date_bounds(home)
    assert first is not None and last is not None
    before = queries.idle_by_cause(first, last, home=home).set_index("cause")
    assert before.loc["down", "gpu_hours"] == pytest.approx(
        _idle_truth(pipeline_home)["down"][0], abs=1e-6
    )

    con = duckdb.connect(str(target))
    con.execute("delete from main.fct_idle_gpu_hours where cause = 'down'")
    con.execute("checkpoint")
    con.close()
    stat = target.stat()
    os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))

    after = queries.idle_by_cause(first, last, home=home).set_index("cause")
    assert after.loc["down", "gpu_hours"] == 0
    assert after.loc["unallocated", "gpu_hours"] == pytest.approx(
        before.loc["unallocated", "gpu_hours"]
    )
