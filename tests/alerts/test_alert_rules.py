"""Each alert rule on hand-made tables (fleetledger/alerts/rules.py); figures by hand."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from alerts.frames import days, forecast, forecast_row, spend
from fleetledger.alerts import rules
from fleetledger.alerts.model import alert_id
from fleetledger.config_alerts import (
    GpuDownRule,
    IdleAllocationRule,
    IdleShareRule,
    RestatementRule,
    SpendAnomalyRule,
    XidSpikeRule,
)

SAT = datetime(2026, 10, 3, 0, 0)
THROUGH = date(2026, 10, 5)


def _run_hours(run_id: str, idle: list[float], *, held: float = 3600.0, ended=None, cost=2.5):
    return [
        {
            "run_id": run_id,
            "job_name": f"job-{run_id}",
            "team": "research",
            "user_name": "alice",
            "ended_at": ended,
            "hour": SAT + timedelta(hours=i),
            "held_seconds": held,
            "allocated_idle_seconds": s,
            "cost": cost,
        }
        for i, s in enumerate(idle)
    ]


def test_idle_allocation_one_alert_per_episode() -> None:
    # r1 (1 GPU, 2.50/h): 10 busy hours, 50 idle (Sat 10:00 .. Mon 12:00), 1 busy, 3 idle
    r1 = _run_hours("r1", [0] * 10 + [3600] * 50 + [0] + [3600] * 3)
    # r2: 20 hours at 3000 of 3600 s idle (83 % < min_idle_share 90 %): never an idle hour
    r2 = _run_hours("r2", [3000] * 20)
    # r3: 12 idle hours at the end of the data, still running: the episode is open
    r3 = _run_hours("r3", [3600] * 12, cost=4.0)
    frame = pl.DataFrame(r1 + r2 + r3)
    alerts = rules.idle_allocation_alerts(
        frame, IdleAllocationRule(kind="idle_allocation"), "idle", THROUGH
    )
    assert [(a.subject, a.period) for a in alerts] == [
        ("r3", "2026-10-03T00:00:00Z"),
        ("r1", "2026-10-03T10:00:00Z"),
    ]
    r3a, r1a = alerts
    # 50 h x 2.50 = 125.00; ended Mon 2026-10-05 12:00 (the next hour is busy)
    assert r1a.amount == pytest.approx(125.0)
    assert r1a.facts["hours"] == 50 and r1a.facts["cost_per_hour"] == pytest.approx(2.5)
    assert r1a.condition_ended_at == datetime(2026, 10, 5, 12, 0)
    assert (r1a.team, r1a.user_name, r1a.rule) == ("research", "alice", "idle_allocation:idle")
    assert "50 h" in r1a.what and "2.50 an hour" in r1a.what
    # 12 h x 4.00 = 48.00, still open
    assert r3a.amount == pytest.approx(48.0) and r3a.condition_ended_at is None
    # the same episode seen again with more hours keeps its id (period = episode start)
    more = pl.DataFrame(_run_hours("r3", [3600] * 20, cost=4.0))
    again = rules.idle_allocation_alerts(
        more, IdleAllocationRule(kind="idle_allocation"), "idle", THROUGH
    )
    assert [a.alert_id for a in again] == [r3a.alert_id] and again[0].amount == pytest.approx(80.0)


def _gpu_rows(host: str, index: int, down: list[float], cost: float = 3.0) -> list[dict]:
    t0 = datetime(2026, 10, 2, 0, 0)
    return [
        {"gpu_uuid": f"{host}-g{index}", "host": host, "gpu_index": index,
         "hour": t0 + timedelta(hours=i), "down_seconds": float(s), "cost": cost}
        for i, s in enumerate(down)
    ]  # fmt: skip


def test_gpu_down_one_alert_per_node_episode() -> None:
    outage = [0, 0, 0, 1800, 3600, 3600, 3600, 3600, 900, 0]
    # n1: a node outage takes all 8 GPUs down from 03:30 to 08:15
    rows = [r for i in range(8) for r in _gpu_rows("n1", i, outage)]
    # n2: one GPU down 3 h (not over 4)
    rows += _gpu_rows("n2", 0, [3600.0 if i < 3 else 0.0 for i in range(10)])
    # n3: GPU 0 down 00:00-03:00, GPU 1 02:00-05:00: one node episode 00:00-05:00, but no GPU
    # is down more than 3 h, so no alert
    rows += _gpu_rows("n3", 0, [3600.0 if i < 3 else 0.0 for i in range(10)])
    rows += _gpu_rows("n3", 1, [3600.0 if 2 <= i < 5 else 0.0 for i in range(10)])
    alerts = rules.gpu_down_alerts(
        pl.DataFrame(rows), GpuDownRule(kind="gpu_down"), "down", THROUGH
    )
    # one alert for n1, not eight: each GPU (1800 + 4 x 3600 + 900) / 3600 = 4.75 h > 4
    assert len(alerts) == 1
    a = alerts[0]
    assert (a.subject, a.period, a.threshold) == ("n1", "2026-10-02T03:00:00Z", 4.0)
    assert a.facts["down_hours"] == pytest.approx(4.75)
    assert a.facts["gpu_down_hours"] == pytest.approx(8 * 4.75)  # 38.0
    assert a.facts["gpu_indices"] == list(range(8))
    assert "8 GPUs (0, 1, 2, 3, 4, 5, 6, 7)" in a.title and "8 GPUs" in a.what
    # the summed cost: 8 GPUs x 4.75 h x 3.00 = 114.00
    assert a.amount == pytest.approx(114.0)
    assert a.condition_ended_at == datetime(2026, 10, 2, 8, 15)
    # the same outage seen again while it lasts (data through 05:00, still down) keeps its id
    # (subject the host, period the episode's first hour), and is open
    early = [r for i in range(8) for r in _gpu_rows("n1", i, outage[:6])]
    again = rules.gpu_down_alerts(
        pl.DataFrame(early), GpuDownRule(kind="gpu_down", min_hours=2), "down", THROUGH
    )
    assert [x.alert_id for x in again] == [
        alert_id("gpu_down:down", "n1", "2026-10-02T03:00:00Z", 2.0)
    ]
    assert again[0].condition_ended_at is None
    # (1800 + 2 x 3600) / 3600 = 2.5 h per GPU; 8 x 2.5 x 3.00 = 60.00
    assert again[0].amount == pytest.approx(60.0)
    # a single GPU down lists that GPU
    one = rules.gpu_down_alerts(
        pl.DataFrame(_gpu_rows("n4", 3, outage)), GpuDownRule(kind="gpu_down"), "down", THROUGH
    )
    assert [(x.subject, x.title) for x in one] == [("n4", "GPU down: n4 (GPU 3)")]
    assert one[0].amount == pytest.approx(14.25)  # 4.75 h x 3.00


def test_xid_spike_against_trailing_baseline() -> None:
    d = days(date(2026, 10, 1), 8)
    n1 = [0, 1, 0, 1, 0, 0, 1, 9]
    n2 = [5, 5, 5, 5, 5, 5, 5, 6]
    n3 = [0, 0, 1, 0, 0, 0, 0, 0]  # one stray XID 63 (not fatal) on a clean node
    n4 = [0, 0, 0, 1, 0, 0, 0, 0]  # one XID 79 (fatal: the GPU fell off the bus)
    rows = [
        {
            "day": x,
            "host": "n1",
            "xid_count": c,
            "fatal_xid_count": 0,
            "down_cost": 40.0 if i == 7 else 0.0,
        }
        for i, (x, c) in enumerate(zip(d, n1, strict=True))
    ]
    for host, counts, fatal in (("n2", n2, False), ("n3", n3, False), ("n4", n4, True)):
        rows += [
            {
                "day": x,
                "host": host,
                "xid_count": c,
                "fatal_xid_count": c if fatal else 0,
                "down_cost": 0.0,
            }
            for x, c in zip(d, counts, strict=True)
        ]
    frame = pl.DataFrame(rows)  # fmt: skip
    alerts = rules.xid_spike_alerts(frame, XidSpikeRule(kind="xid_spike"), "xid", THROUGH)
    # defaults (factor 3, min_count 2, fatal_min_count 1, baseline 7 days):
    # n1 on Oct 8: 9 >= 2 and 9 > 3 x (3 / 7 = 0.43); its Oct 2 single XID (baseline 0) is
    # under min_count 2; n2: 6 < 3 x 5; n3's stray XID: 1 < 2 and not fatal, no alert;
    # n4's XID 79 on Oct 4: 1 fatal >= fatal_min_count 1, and 1 > 3 x 0
    assert [(a.subject, a.period) for a in alerts] == [("n4", "2026-10-04"), ("n1", "2026-10-08")]
    n4a, n1a = alerts
    assert n1a.facts["baseline"] == pytest.approx(3 / 7)
    assert n1a.amount == pytest.approx(40.0)
    assert n4a.facts["fatal_xid_count"] == 1 and "1 of them fatal" in n4a.what
    # fatal XIDs counted like the others: n4's single XID is under min_count too
    plain = XidSpikeRule(kind="xid_spike", fatal_min_count=None)
    assert [a.subject for a in rules.xid_spike_alerts(frame, plain, "xid", THROUGH)] == ["n1"]
    # min_count 1: every clean node's first XID is a spike (n1 Oct 2, n3 Oct 3, n4 Oct 4)
    loose = rules.xid_spike_alerts(
        frame, XidSpikeRule(kind="xid_spike", min_count=1), "xid", THROUGH
    )
    assert [(a.subject, a.period) for a in loose] == [
        ("n1", "2026-10-02"),
        ("n3", "2026-10-03"),
        ("n4", "2026-10-04"),
        ("n1", "2026-10-08"),
    ]


def test_idle_share_per_calendar_month() -> None:
    frame = pl.DataFrame(
        [
            # research in October: 30 busy + 20 idle GPU-hours -> 40 % > 25 %; idle cost 50
            {"day": date(2026, 10, 1), "team": "research", "busy_gpu_hours": 10.0,
             "allocated_idle_gpu_hours": 15.0, "allocated_idle_cost": 30.0},
            {"day": date(2026, 10, 2), "team": "research", "busy_gpu_hours": 20.0,
             "allocated_idle_gpu_hours": 5.0, "allocated_idle_cost": 20.0},
            # data: 10 of 100 -> 10 %
            {"day": date(2026, 10, 1), "team": "data", "busy_gpu_hours": 90.0,
             "allocated_idle_gpu_hours": 10.0, "allocated_idle_cost": 9.0},
            # research in September: no idle
            {"day": date(2026, 9, 30), "team": "research", "busy_gpu_hours": 10.0,
             "allocated_idle_gpu_hours": 0.0, "allocated_idle_cost": 0.0},
        ]
    )  # fmt: skip
    alerts = rules.idle_share_alerts(frame, IdleShareRule(kind="idle_share"), "share", THROUGH)
    assert [(a.subject, a.period, a.team) for a in alerts] == [
        ("team:research", "2026-10", "research")
    ]
    assert alerts[0].facts["idle_share"] == pytest.approx(0.4)
    assert alerts[0].amount == pytest.approx(50.0)


def test_spend_anomaly_one_step_forecast_and_contributor() -> None:
    d10, d9, d8 = date(2026, 10, 10), date(2026, 10, 9), date(2026, 10, 8)
    fc = forecast(
        [
            # research on Oct 10: 5000 against 1000 (99 %: 600..1400), impact 4000 > 500
            forecast_row(scope="team:research", day=d10, actual=5000.0, yhat=1000.0,
                         lo_99=600.0, hi_99=1400.0, trained_through=d9, horizon=1),
            # data: outside the band but |1500 - 1000| = 500 is not over the floor
            forecast_row(scope="team:data", day=d10, actual=1500.0, yhat=1000.0,
                         lo_99=900.0, hi_99=1100.0, trained_through=d9, horizon=1),
            # a forecast trained two days before: not the one the day is judged on
            forecast_row(scope="service:ec2", day=d10, actual=9000.0, yhat=1000.0,
                         lo_99=900.0, hi_99=1100.0, trained_through=d8, horizon=2),
            # inside the band
            forecast_row(scope="team:research", day=d9, actual=1050.0, yhat=1000.0,
                         lo_99=600.0, hi_99=1400.0, trained_through=d8, horizon=1),
        ]
    )  # fmt: skip
    # research's services: ec2 100/day and s3 50/day Oct 3..9; on Oct 10 ec2 3000, s3 1950:
    # ec2 moved +2900 against its 7-day mean (100), s3 +1900
    pieces = spend(
        [(x, "research", "aws", "a", "ec2", 100.0, 0.0) for x in days(date(2026, 10, 3), 7)]
        + [(x, "research", "aws", "a", "s3", 50.0, 0.0) for x in days(date(2026, 10, 3), 7)]
        + [(d10, "research", "aws", "a", "ec2", 3000.0, 0.0)]
        + [(d10, "research", "aws", "a", "s3", 1950.0, 0.0)]
    )
    alerts = rules.spend_anomaly_alerts(
        fc, pieces, SpendAnomalyRule(kind="spend_anomaly"), "anomaly", d10
    )
    assert [(a.subject, a.period, a.team) for a in alerts] == [
        ("team:research", "2026-10-10", "research")
    ]
    a = alerts[0]
    assert a.amount == pytest.approx(4000.0)
    assert a.facts["contributor"] == "ec2"
    assert "service ec2 (+2,900.00" in a.what
    assert (
        rules.spend_anomaly_alerts(None, pieces, SpendAnomalyRule(kind="spend_anomaly"), "a", d10)
        == []
    )


def test_restatement_share_and_services() -> None:
    frame = pl.DataFrame(
        [
            # aws 2026-10, delivery d2: ec2 1000 -> 1100, s3 100 -> 100: +100 of 1100 = 9.1 %
            {"provider": "aws", "billing_period": "2026-10", "delivery_id": "d2",
             "service_name": "AmazonEC2", "billing_currency": "USD",
             "old_effective_cost": 1000.0, "new_effective_cost": 1100.0},
            {"provider": "aws", "billing_period": "2026-10", "delivery_id": "d2",
             "service_name": "AmazonS3", "billing_currency": "USD",
             "old_effective_cost": 100.0, "new_effective_cost": 100.0},
            # 2026-09, delivery d3: 1000 -> 1010 = 1 % < 5 %
            {"provider": "aws", "billing_period": "2026-09", "delivery_id": "d3",
             "service_name": "AmazonEC2", "billing_currency": "USD",
             "old_effective_cost": 1000.0, "new_effective_cost": 1010.0},
        ]
    )  # fmt: skip
    alerts = rules.restatement_alerts(
        frame, RestatementRule(kind="restatement"), "restated", THROUGH, {}, "USD"
    )
    assert [(a.subject, a.period) for a in alerts] == [("aws:d2", "2026-10")]
    a = alerts[0]
    assert a.amount == pytest.approx(100.0)
    assert a.facts["share"] == pytest.approx(100 / 1100)
    assert "AmazonEC2 +100.00" in a.what and "AmazonS3" not in a.what
    assert "delivery d2" in a.what


def test_alert_ids_are_stable() -> None:
    a = alert_id("xid_spike:xid", "n1", "2026-10-08", 3.0)
    assert a == alert_id("xid_spike:xid", "n1", "2026-10-08", 3)
    assert a != alert_id("xid_spike:xid", "n1", "2026-10-09", 3.0)
    assert len(a) == 16 and int(a, 16) >= 0
