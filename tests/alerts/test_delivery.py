"""Delivery with real local servers (an HTTP receiver, aiosmtpd) on hand-made inputs: once per
alert and channel across runs, failures recorded and retried with backoff, digests, resolved
notices, muting, routing, and no secret in anything written (fleetledger/alerts/engine.py)."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from alerts.frames import days, spend
from alerts.receivers import free_port, http_receiver, smtp_receiver
from fleetledger.alerts.engine import run_alerts
from fleetledger.alerts.inputs import Inputs
from fleetledger.alerts.store import read_state, store_path
from fleetledger.config import Config, parse_config

SLACK_TOKEN = "T0SECRET/B0SECRET/xoxbSecretSlackToken42"
HOOK_TOKEN = "hook-path-secret-77"
HOOK_KEY = "api-key-secret-99"
SMTP_USER = "mailer-user-secret"
SMTP_PASSWORD = "hunter2-smtp-secret"
SECRETS = (SLACK_TOKEN, HOOK_TOKEN, HOOK_KEY, SMTP_USER, SMTP_PASSWORD)
DAY1 = datetime(2026, 10, 5, 6, 0, tzinfo=UTC)


def _inputs(xids: list[int]) -> Inputs:
    # research spends 100/day Oct 1..4 (400 of a 300 budget: the 50 % and 100 % thresholds);
    # node n1's XIDs per day from Oct 3 (a spike when a day is over 3 x the days before)
    health = pl.DataFrame(
        {
            "day": days(date(2026, 10, 3), len(xids)),
            "host": ["n1"] * len(xids),
            "xid_count": xids,
            "down_cost": [0.0] * len(xids),
        }
    )
    pieces = spend(
        [(d, "research", "aws", "a", "ec2", 100.0, 0.0) for d in days(date(2026, 10, 1), 4)]
    )
    return Inputs(spend=pieces, health=health)


def _config(
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    http_port: int,
    smtp_port: int,
    *,
    digest: bool = False,
    rules: list[dict] | None = None,
    teams: list[dict] | None = None,
    budget_channels: list[str] | None = None,
) -> Config:
    monkeypatch.setenv("SLACK_WEBHOOK_URL", f"http://127.0.0.1:{http_port}/slack/{SLACK_TOKEN}")
    monkeypatch.setenv("ALERT_WEBHOOK_URL", f"http://127.0.0.1:{http_port}/hook/{HOOK_TOKEN}")
    monkeypatch.setenv("HOOK_KEY", HOOK_KEY)
    monkeypatch.setenv("SMTP_USER", SMTP_USER)
    monkeypatch.setenv("SMTP_PASSWORD", SMTP_PASSWORD)
    everywhere = ["finops-slack", "hooks", "leads"]
    data = {
        "teams": teams or [],
        "budgets": [
            {
                "name": "research-monthly",
                "scope": {"team": "research"},
                "amount": 300,
                "thresholds": [0.5, 1.0],
                "basis": ["actual"],
                "channels": everywhere if budget_channels is None else budget_channels,
            }
        ],
        "alerts": {
            "app_url": "https://fleetledger.example/",
            "retry_base_seconds": 300,
            "timeout_seconds": 5,
            "channels": [
                {"name": "finops-slack", "kind": "slack", "url": "${SLACK_WEBHOOK_URL}",
                 "digest": digest},
                {"name": "hooks", "kind": "webhook", "url": "${ALERT_WEBHOOK_URL}",
                 "headers": {"X-Api-Key": "${HOOK_KEY}"}},
                {"name": "leads", "kind": "email", "to": ["leads@example.com"],
                 "from": "fleetledger@example.com",
                 "smtp": {"host": "127.0.0.1", "port": smtp_port, "security": "none",
                          "username": "${SMTP_USER}", "password": "${SMTP_PASSWORD}"}},
            ],
            "rules": rules if rules is not None else [
                {"kind": "xid_spike", "name": "xid", "channels": everywhere}
            ],
        },
    }  # fmt: skip
    return parse_config(data, tmp / "fleetledger.yml")


def _bodies(rec, prefix: str) -> list:
    return [body for p, _h, body in rec.posts if p.startswith(prefix)]


def test_each_alert_once_per_channel_across_two_daily_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with http_receiver() as http, smtp_receiver(SMTP_USER, SMTP_PASSWORD) as smtp:
        cfg = _config(tmp_path, monkeypatch, http.port, smtp.port)
        first = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1)
        second = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1 + timedelta(days=1))
    # 3 alerts (budget 50 % and 100 %, the XID spike on Oct 4) x 3 channels, all on the first run
    assert first.alerts.height == 3
    assert (first.sent, first.failed) == (9, 0)
    assert (second.sent, second.failed, second.due) == (0, 0, [])
    slack, hooks = _bodies(http, "/slack/"), _bodies(http, "/hook/")
    ids = sorted(first.alerts["alert_id"].to_list())
    assert sorted(b["alert_id"] for b in hooks) == ids
    assert len(slack) == 3 and all("blocks" in b and b["text"] for b in slack)
    assert len(smtp.messages) == 3
    # the webhook schema: the alert's id and figures, the header from the config
    xid = next(b for b in hooks if b["kind"] == "xid_spike")
    assert xid["schema"] == "fleetledger.alert/v1" and xid["notice"] == "raised"
    assert (xid["subject"], xid["period"], xid["facts"]["xid_count"]) == ("n1", "2026-10-04", 5)
    # the link opens the view of the alert's subject: fleet health on the spike's day
    assert xid["link"] == (
        f"https://fleetledger.example/health?alert={xid['alert_id']}"
        "&start=2026-10-04&end=2026-10-04"
    )
    budget_link = next(b for b in hooks if b["kind"] == "budget")["link"]
    assert budget_link.startswith("https://fleetledger.example/budgets?alert=")
    assert budget_link.endswith("&budget=research-monthly")
    assert all(h.get("X-Api-Key") == HOOK_KEY for p, h, _b in http.posts if p.startswith("/hook/"))
    budget = next(b for b in hooks if b["threshold"] == 1.0)
    assert budget["amount"] == pytest.approx(400.0) and budget["team"] == "research"
    assert "Spend through 2026-10-04" in budget["message"]
    # every delivery is recorded once, sent
    d = second.deliveries
    assert d.height == 9 and set(d["status"]) == {"sent"} and set(d["attempt"]) == {1}


def test_failed_delivery_is_recorded_retried_with_backoff_and_sent_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    port = free_port()  # nothing listens yet: the receiver is down
    with smtp_receiver(SMTP_USER, SMTP_PASSWORD) as smtp:
        cfg = _config(tmp_path, monkeypatch, port, free_port())  # a wrong SMTP port too
        down = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1)
        assert (down.sent, down.failed) == (0, 9)
        failed = down.deliveries
        assert set(failed["status"]) == {"failed"} and failed["error"].null_count() == 0
        assert {f.check for f in down.findings} >= {
            "alert_delivery:finops-slack",
            "alert_delivery:hooks",
            "alert_delivery:leads",
        }
        assert all(f.severity == "warning" for f in down.findings)
        # one minute later: inside the backoff (2^0 x 300 s), nothing is attempted
        early = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1 + timedelta(seconds=60))
        assert early.due == [] and early.deliveries.height == 9
        with http_receiver(port) as http:
            cfg = _config(tmp_path, monkeypatch, port, smtp.port)
            later = DAY1 + timedelta(seconds=301)
            retry = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=later)
            again = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=later + timedelta(days=1))
    assert (retry.sent, retry.failed) == (9, 0) and again.due == []
    assert len(_bodies(http, "/slack/")) == 3 and len(_bodies(http, "/hook/")) == 3
    assert len(smtp.messages) == 3
    # attempts 1 (failed) and 2 (sent) per alert and channel
    d = again.deliveries.sort(["alert_id", "channel", "attempt"])
    assert d.group_by(["alert_id", "channel"]).agg(pl.col("status")).height == 9
    assert d.filter(pl.col("attempt") == 2)["status"].unique().to_list() == ["sent"]
    # no secret in the errors, the findings, the store, the frames or anything printed
    written = store_path(tmp_path).read_text()
    texts = [
        written,
        *[f.message for f in down.findings],
        *failed["error"].to_list(),
        *[json.dumps(r, default=str) for r in again.alerts.to_dicts()],
        *[json.dumps(r, default=str) for r in again.deliveries.to_dicts()],
        *[json.dumps(r, default=str) for r in _bodies(http, "/")],
        *[m.content.decode(errors="replace") for m in smtp.messages],
    ]
    captured = capfd.readouterr()
    texts += [captured.out, captured.err]
    for secret in SECRETS:
        assert not any(secret in t for t in texts), secret
    assert "ConnectionRefusedError" in failed["error"][0] or "refused" in failed["error"][0].lower()


def test_digest_one_message_a_day(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with http_receiver() as http, smtp_receiver(SMTP_USER, SMTP_PASSWORD) as smtp:
        cfg = _config(tmp_path, monkeypatch, http.port, smtp.port, digest=True)
        run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1)
        # a new spike the same day waits for the next day's digest
        later = run_alerts(tmp_path, _inputs([0, 5, 40]), cfg, now=DAY1 + timedelta(hours=2))
        assert [d.channel for d in later.due if d.channel == "finops-slack"] == []
        run_alerts(tmp_path, _inputs([0, 5, 40]), cfg, now=DAY1 + timedelta(days=1))
    digests = _bodies(http, "/slack/")
    # day 1: 3 alerts in one message; day 2: the Oct 5 spike alone
    assert len(digests) == 2
    assert digests[0]["text"].startswith("fleetledger: 3 alert(s) on 2026-10-05")
    assert digests[1]["text"].startswith("fleetledger: 1 alert(s) on 2026-10-06")
    # the other channels take one message per alert: 3 + 1
    assert len(_bodies(http, "/hook/")) == 4 and len(smtp.messages) == 4


def test_resolved_said_once_muted_and_routing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rules = [
        {"kind": "xid_spike", "name": "xid"},  # no channels: the owning team's, else the log
        {"kind": "xid_spike", "name": "quiet", "factor": 2, "muted": True, "channels": ["hooks"]},
    ]
    teams = [{"team": "research", "match": {"slurm_account": ["r"]}, "channels": ["hooks"]}]
    with http_receiver() as http, smtp_receiver(SMTP_USER, SMTP_PASSWORD) as smtp:
        cfg = _config(
            tmp_path, monkeypatch, http.port, smtp.port, rules=rules, teams=teams,
            budget_channels=[],
        )  # fmt: skip
        first = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1)
        # a rebuild restates the data: no spike any more -> resolved, said once
        gone = run_alerts(tmp_path, _inputs([0, 0]), cfg, now=DAY1 + timedelta(days=1))
        again = run_alerts(tmp_path, _inputs([0, 0]), cfg, now=DAY1 + timedelta(days=2))
    alerts = first.alerts
    xid = alerts.filter(pl.col("rule") == "xid_spike:xid").row(0, named=True)
    quiet = alerts.filter(pl.col("rule") == "xid_spike:quiet").row(0, named=True)
    # the XID alert has no team: no team channels -> the log; the muted rule's alert is
    # recorded but sent nowhere; the budget alerts (no channels) go to the log
    assert xid["channels"] == ["log"] and quiet["muted"] and quiet["channels"] == ["hooks"]
    assert set(first.deliveries["channel"]) == {"log"}
    assert http.posts == [] and smtp.messages == []
    # resolved: the XID alerts get resolved_at, the log gets one resolved notice for the sent one
    state = read_state(tmp_path)
    assert state.alerts[xid["alert_id"]].resolved_at == DAY1 + timedelta(days=1)
    notices = gone.deliveries.filter(pl.col("alert_id") == xid["alert_id"])["notice"].to_list()
    assert notices == ["raised", "resolved"]
    assert again.due == []
    # a team budget without channels goes to the log (DESIGN: budgets default to the log)
    budget = alerts.filter(pl.col("kind") == "budget")
    assert budget.height == 2 and all(c == ["log"] for c in budget["channels"].to_list())


def test_dry_run_prints_what_and_to_whom_and_records_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from rich.console import Console

    from fleetledger.alerts.console import print_due

    cfg = _config(tmp_path, monkeypatch, free_port(), free_port())
    run = run_alerts(tmp_path, _inputs([0, 5]), cfg, now=DAY1, dry_run=True)
    out, err = Console(record=True, width=300), Console(record=True, width=300)
    print_due(run, dry_run=True, out=out, err=err)
    text = out.export_text()
    # 3 alerts x 3 channels, nothing sent, nothing stored
    assert sum(len(d.items) for d in run.due) == 9 and run.sent == 0
    assert "email to leads@example.com" in text and "finops-slack (slack webhook)" in text
    assert "XID spike: n1" in text and "9 notice(s) due" in text
    assert not store_path(tmp_path).exists()
    assert not any(s in text + err.export_text() for s in SECRETS)
