"""fct_budget_status on hand-made spend and forecast frames (fleetledger/alerts/budgets.py)."""

from __future__ import annotations

from datetime import date

import pytest

from alerts.frames import days, forecast, forecast_row, spend
from fleetledger.alerts.budgets import budget_status, period_start
from fleetledger.alerts.model import alert_id
from fleetledger.alerts.rules import budget_alerts
from fleetledger.config_alerts import Budget

OCT1 = date(2026, 10, 1)

# Oct 1..10: research 100/day on aws (sub-account acct-1, shared idle 10/day), data 50/day on
# gcp (proj-2), aws idle (team null) 20/day; and research 200 on Sep 30.
SPEND = spend(
    [(d, "research", "aws", "acct-1", "ec2", 100.0, 10.0) for d in days(OCT1, 10)]
    + [(d, "data", "gcp", "proj-2", "gce", 50.0, 0.0) for d in days(OCT1, 10)]
    + [(d, None, "aws", "acct-1", "ec2", 20.0, 0.0) for d in days(OCT1, 10)]
    + [(date(2026, 9, 30), "research", "aws", "acct-1", "ec2", 200.0, 0.0)]
)
FORECAST = forecast(
    [
        # research, trained through its last actual day: the rest of October sums to 2100
        forecast_row(
            scope="team:research",
            day=date(2026, 10, 31),
            trained_through=date(2026, 10, 10),
            horizon=21,
            cum_yhat=2100.0,
            cum_lo_80=1800.0,
            cum_hi_80=2400.0,
        ),
        # the whole bill, trained through Oct 8 (two days stale): Oct 9..Dec 31 sums to 8000
        forecast_row(
            scope="total",
            day=date(2026, 12, 31),
            trained_through=date(2026, 10, 8),
            horizon=84,
            cum_yhat=8000.0,
            cum_lo_80=7000.0,
            cum_hi_80=9000.0,
        ),
    ]
)
BUDGETS = [
    Budget(name="research-monthly", scope={"team": "research"}, amount=1000),
    Budget(name="research-all", scope={"team": "research"}, amount=1000, include_shared_idle=True),
    Budget(name="aws-eur", scope={"provider": "aws"}, amount=1000, currency="EUR"),
    Budget(name="all-quarterly", scope={}, amount=5000, period="quarter"),
    Budget(name="proj-2", scope={"sub_account": "proj-2"}, amount=400, basis=["actual"]),
    Budget(name="pounds", scope={}, amount=100, currency="GBP"),
]


@pytest.fixture(scope="module")
def status():
    return budget_status(
        BUDGETS, SPEND, FORECAST, reporting_currency="USD", currency_rates={"EUR": 1.1}
    )


def _row(status, budget: str, start: date) -> dict:
    rows = status.frame.filter(
        (status.frame["budget"] == budget) & (status.frame["period_start"] == start)
    )
    assert rows.height == 1
    return rows.row(0, named=True)


def test_periods() -> None:
    assert period_start(date(2026, 11, 18), "month") == date(2026, 11, 1)
    assert period_start(date(2026, 11, 18), "quarter") == date(2026, 10, 1)
    assert period_start(date(2026, 3, 31), "quarter") == date(2026, 1, 1)


def test_team_budget_actual_and_forecast(status) -> None:
    r = _row(status, "research-monthly", OCT1)
    # direct cost only: 10 x 100 = 1000 of 1000 -> every threshold crossed (>=)
    assert r["spend_to_date"] == pytest.approx(1000.0)
    assert r["used_share"] == pytest.approx(1.0)
    assert r["data_through"] == date(2026, 10, 10)
    assert r["thresholds_crossed_actual"] == [0.5, 0.8, 1.0]
    # 1000 + the rest of October's total (2100; 80 %: 1800..2400)
    assert r["forecast_period_end"] == pytest.approx(3100.0)
    assert (r["forecast_lo_80"], r["forecast_hi_80"]) == pytest.approx((2800.0, 3400.0))
    assert r["thresholds_crossed_forecast"] == [0.5, 0.8, 1.0]
    # the September period: 200 of 1000, complete, its forecast is what was spent
    sep = _row(status, "research-monthly", date(2026, 9, 1))
    assert sep["spend_to_date"] == pytest.approx(200.0)
    assert sep["period_complete"] and sep["forecast_period_end"] == pytest.approx(200.0)
    assert sep["thresholds_crossed_actual"] == []


def test_shared_idle_provider_currency_and_total(status) -> None:
    # research + its shared idle: 10 x (100 + 10) = 1100; forecast scope team:research+shared_idle
    # is absent -> forecast skipped with a finding
    r = _row(status, "research-all", OCT1)
    assert r["spend_to_date"] == pytest.approx(1100.0)
    assert r["forecast_period_end"] is None
    # aws = research 1000 + idle 200 = 1200 against 1000 EUR x 1.1 = 1100 USD
    r = _row(status, "aws-eur", OCT1)
    assert (r["amount"], r["currency"]) == (1000.0, "EUR")
    assert r["amount_reporting"] == pytest.approx(1100.0)
    assert r["used_share"] == pytest.approx(1200 / 1100)
    # the whole bill, Q4 so far: 10 x (100 + 50 + 20) = 1700; trained through Oct 8, so
    # Oct 1..8 actual (8 x 170 = 1360) + 8000 (7000..9000)
    r = _row(status, "all-quarterly", OCT1)
    assert r["spend_to_date"] == pytest.approx(1700.0)
    assert r["forecast_period_end"] == pytest.approx(9360.0)
    assert (r["forecast_lo_80"], r["forecast_hi_80"]) == pytest.approx((8360.0, 10360.0))
    assert r["forecast_trained_through"] == date(2026, 10, 8)
    assert r["thresholds_crossed_forecast"] == [0.5, 0.8, 1.0]
    # Q3 holds Sep 30 only: 200
    assert _row(status, "all-quarterly", date(2026, 7, 1))["spend_to_date"] == pytest.approx(200)
    # sub-account proj-2: 10 x 50 = 500 of 400; actual basis only: no forecast looked for
    r = _row(status, "proj-2", OCT1)
    assert r["used_share"] == pytest.approx(1.25)


def test_findings(status) -> None:
    checks = {f.check for f in status.findings}
    # no rate for GBP: not computed; no research+shared_idle forecast; no proj-2 forecast is
    # looked for (actual basis)
    assert "budget_currency:pounds" in checks
    assert status.frame.filter(status.frame["budget"] == "pounds").height == 0
    assert "budget_forecast_missing:research-all" in checks
    assert "budget_forecast_missing:proj-2" not in checks
    assert all(f.severity == "warning" for f in status.findings)


def test_no_forecast_mart_is_a_finding_not_a_crash() -> None:
    result = budget_status(BUDGETS[:1], SPEND, None, reporting_currency="USD", currency_rates={})
    r = result.frame.filter(result.frame["period_start"] == OCT1).row(0, named=True)
    assert r["forecast_period_end"] is None and r["spend_to_date"] == pytest.approx(1000.0)
    assert [f.check for f in result.findings] == ["budget_forecast_missing:research-monthly"]


def test_budget_alerts(status) -> None:
    alerts = budget_alerts(status.frame, BUDGETS)
    research = [a for a in alerts if a.rule.startswith("budget:research-monthly:")]
    # Oct: three actual thresholds + the forecast alert (lo_80 2800 > 1000); Sep: none
    assert sorted((a.rule, a.threshold) for a in research) == [
        ("budget:research-monthly:actual", 0.5),
        ("budget:research-monthly:actual", 0.8),
        ("budget:research-monthly:actual", 1.0),
        ("budget:research-monthly:forecast", 1.0),
    ]
    fc = next(a for a in research if a.rule.endswith(":forecast"))
    assert fc.amount == pytest.approx(3100 - 1000)
    assert fc.period == "2026-10-01" and fc.team == "research"
    top = next(a for a in research if a.threshold == 1.0 and a.rule.endswith(":actual"))
    assert top.alert_id == alert_id(
        "budget:research-monthly:actual", "team:research", "2026-10-01", 1.0
    )
    assert top.amount == pytest.approx(1000.0)
    text = top.message("USD")
    assert "Spend through 2026-10-10" in text and "1,000.00 USD" in text and "team research" in text
    # the whole bill's Q4: forecast lo 8360 > 5000 -> a forecast alert; actual 1700 < 2500: none
    total = [a for a in alerts if a.rule.startswith("budget:all-quarterly:")]
    assert [(a.rule, a.period) for a in total] == [("budget:all-quarterly:forecast", "2026-10-01")]
