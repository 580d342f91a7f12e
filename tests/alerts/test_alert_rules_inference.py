"""The inference alert rules on hand-made service-hours (fleetledger/alerts/rules_inference.py);
figures by hand."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from alerts.frames import days, spend
from fleetledger.alerts import rules_inference
from fleetledger.alerts.engine import _link, evaluate
from fleetledger.alerts.inputs import Inputs
from fleetledger.config import parse_config
from fleetledger.config_alerts import Alerts, InferenceCostRiseRule, InferenceSloRule

MON = datetime(2026, 10, 5, 0, 0)  # a Monday
THROUGH = date(2026, 10, 18)


def _hours(
    model: str, start: datetime, n: int, *, tokens: float, cost: float, util: float, ttft=0.5
) -> list[dict]:
    return [
        {
            "model_name": model,
            "hour": start + timedelta(hours=i),
            "team": "serving",
            "tokens": tokens,
            "cost": cost,
            "gpu_hours": 4.0,
            "mean_utilization": util,
            "ttft_p95_s": ttft,
        }
        for i in range(n)
    ]


def test_inference_cost_rise_week_over_week_only_while_gpus_are_underused() -> None:
    rule = InferenceCostRiseRule(kind="inference_cost_rise", min_rise=0.2, max_utilization=0.5)
    week2 = MON + timedelta(days=7)
    rows = (
        # m: week 1, 10 h x 1M tokens at 20 = 20 per 1M; week 2, 10 h x 0.5M tokens at 15 =
        # 30 per 1M: up 50 % (> 20 %) at 30 % utilisation (< 50 %): an alert; the rise cost
        # (30 - 20) x 5M / 1M = 50
        _hours("m", MON, 10, tokens=1e6, cost=20, util=0.3)
        + _hours("m", week2, 10, tokens=5e5, cost=15, util=0.3)
        # busy: the same rise at 80 % utilisation: load, not waste: no alert
        + _hours("busy", MON, 10, tokens=1e6, cost=20, util=0.8)
        + _hours("busy", week2, 10, tokens=5e5, cost=15, util=0.8)
        # small: 20 -> 22 per 1M, up 10 % (< 20 %): no alert
        + _hours("small", MON, 10, tokens=1e6, cost=20, util=0.3)
        + _hours("small", week2, 10, tokens=1e6, cost=22, util=0.3)
        # gap: week 1 and week 3 (no week between to compare with): no alert
        + _hours("gap", MON, 10, tokens=1e6, cost=20, util=0.3)
        + _hours("gap", MON + timedelta(days=14), 10, tokens=1e6, cost=40, util=0.3)
    )
    found = rules_inference.inference_cost_rise_alerts(pl.DataFrame(rows), rule, "rise", THROUGH)
    assert [(a.subject, a.period) for a in found] == [("service:m", "2026-10-12")]
    a = found[0]
    assert a.amount == pytest.approx(50.0)
    assert a.facts["cost_per_1m_tokens"] == pytest.approx(30.0)
    assert a.facts["previous_cost_per_1m_tokens"] == pytest.approx(20.0)
    assert a.facts["rise"] == pytest.approx(0.5)
    assert (a.team, a.rule, a.threshold) == ("serving", "inference_cost_rise:rise", 0.2)
    assert "up 50.0 %" in a.title and "30.0 % utilisation" in a.what


def test_inference_slo_one_alert_per_episode_while_gpus_are_underused() -> None:
    rule = InferenceSloRule(
        kind="inference_slo", ttft_p95_seconds=1.0, max_utilization=0.5, min_hours=2
    )
    rows = (
        # m: 2 h within the SLO, 3 h at 1.5 s with 20 % utilisation (an episode of 3 h, 3 x
        # 10 = 30 at stake, ended at 05:00), 1 h within, 1 h over (1 h < min_hours 2: none)
        _hours("m", MON, 2, tokens=1e6, cost=10, util=0.2, ttft=0.5)
        + _hours("m", MON + timedelta(hours=2), 3, tokens=1e6, cost=10, util=0.2, ttft=1.5)
        + _hours("m", MON + timedelta(hours=5), 1, tokens=1e6, cost=10, util=0.2, ttft=0.5)
        + _hours("m", MON + timedelta(hours=6), 1, tokens=1e6, cost=10, util=0.2, ttft=1.5)
        # busy: over the SLO for 4 h but at 90 % utilisation (capacity, not waste): none
        + _hours("busy", MON, 4, tokens=1e6, cost=10, util=0.9, ttft=2.0)
        # open: over the SLO in its last 2 h: an alert still open
        + _hours("open", MON, 2, tokens=1e6, cost=7, util=0.1, ttft=3.0)
    )
    found = rules_inference.inference_slo_alerts(pl.DataFrame(rows), rule, "slo", THROUGH)
    assert [(a.subject, a.period) for a in found] == [
        ("service:open", "2026-10-05T00:00:00Z"),
        ("service:m", "2026-10-05T02:00:00Z"),
    ]
    open_, m = found
    assert m.amount == pytest.approx(30.0) and m.condition_ended_at == MON + timedelta(hours=5)
    assert m.facts["hours"] == 3 and m.facts["worst_ttft_p95_s"] == pytest.approx(1.5)
    assert open_.amount == pytest.approx(14.0) and open_.condition_ended_at is None
    assert "over the 1 s SLO for 3 h" in m.what


def test_the_inference_rules_parse_from_config() -> None:
    alerts = Alerts.model_validate(
        {
            "rules": [
                {"kind": "inference_cost_rise", "min_rise": 0.3},
                {"kind": "inference_slo", "ttft_p95_seconds": 0.8, "max_utilization": 0.4},
            ]
        }
    )
    rise, slo = alerts.rules
    assert isinstance(rise, InferenceCostRiseRule) and rise.max_utilization == 0.5
    assert isinstance(slo, InferenceSloRule) and slo.min_hours == 1
    assert alerts.rule_names() == ["inference_cost_rise-1", "inference_slo-1"]


def test_the_engine_runs_the_inference_rules_and_links_the_economics_page() -> None:

    cfg = parse_config(
        {
            "alerts": {
                "app_url": "https://fl.example/",
                "rules": [{"kind": "inference_slo", "ttft_p95_seconds": 1.0}],
            }
        },
        Path("fleetledger.yml"),
    )
    pieces = spend([(d, "serving", "gcp", "p", "gke", 10.0, 0.0) for d in days(MON.date(), 2)])
    # 2 h over the SLO at 20 % utilisation: one alert, 2 x 10 = 20 at stake
    hours = _hours("m", MON, 2, tokens=1e6, cost=10, util=0.2, ttft=1.5)
    ev = evaluate(Inputs(spend=pieces, service_hours=pl.DataFrame(hours)), cfg)
    assert [(a.kind, a.subject, a.amount) for a in ev.alerts] == [
        ("inference_slo", "service:m", 20.0)
    ]
    link = _link(cfg, ev.alerts[0])
    assert link is not None and link.startswith("https://fl.example/economics?alert=")
    # a warehouse without fct_inference_hourly: the rule is skipped with a finding
    skipped = evaluate(Inputs(spend=pieces), cfg)
    assert skipped.alerts == []
    assert any(f.check == "alert_rule_skipped:inference_slo-1" for f in skipped.findings)
