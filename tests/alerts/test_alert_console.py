"""The demo's budgets-and-alerts section (fleetledger/alerts/console.py) on hand-made marts."""

from __future__ import annotations

import io
from pathlib import Path

import duckdb
from rich.console import Console

from fleetledger.alerts.console import print_budgets_and_alerts


def _printed(path: Path) -> str:
    buf = io.StringIO()
    print_budgets_and_alerts(path, Console(file=buf, width=160), top=2)
    return buf.getvalue()


def test_current_period_of_each_budget_and_the_alerts_with_most_money(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    con = duckdb.connect(str(path))
    con.execute(
        "create table fct_budget_status as select * from (values "
        "('r', date '2026-10-01', 1000.0, 'USD', 900.0, date '2026-10-31', 900.0, 900.0, "
        " 900.0, 0.9, [0.5, 0.8]), "
        "('r', date '2026-11-01', 1000.0, 'USD', 1250.0, date '2026-11-20', 1800.0, 1700.0, "
        " 1900.0, 1.25, [0.5, 0.8, 1.0])) "
        "t(budget, period_start, amount, currency, spend_to_date, data_through, "
        "forecast_period_end, forecast_lo_80, forecast_hi_80, used_share, "
        "thresholds_crossed_actual)"
    )
    con.execute(
        "create table fct_alerts as select * from (values "
        "('a1', 'Budget r: 100.0 % crossed', 'r', 1250.0, 'USD', null::timestamptz), "
        "('a2', 'Idle allocation: nb', 'r', 300.5, 'USD', timestamptz '2026-11-03 09:00+00'), "
        "('a3', 'GPU down: n1:0', null, 12.0, 'USD', null::timestamptz)) "
        "t(alert_id, title, team, amount, currency, resolved_at)"
    )
    con.close()
    text = _printed(path)
    # only November's period of budget r: 1,250 of 1,000 (125 %), forecast 1,800 (1,700-1,900)
    assert "2026-11-01 → 2026-11-20" in text and "2026-10-01" not in text
    assert "1,250.00 USD" in text and "125%" in text and "1,800 (1,700 – 1,900)" in text
    # 3 alerts, 2 open; the top 2 by money: the budget (open) and the idle notebook (resolved)
    assert "3 raised, 2 open; top 2 by money" in text
    assert "300.50 USD" in text and "resolved" in text and "GPU down" not in text


def test_a_warehouse_without_the_marts_says_so(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    duckdb.connect(str(path)).close()
    assert "alerts: no fct_alerts in this warehouse" in _printed(path)
