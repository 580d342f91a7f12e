"""Evaluate budgets and alert rules on a warehouse, reconcile with the state store, and send
what is due (docs/alerts.md). One entry point for the pipeline's alerts asset and for
`fleetledger alerts`: `run_alerts`.

What is due, per alert and channel: its `raised` notice until one attempt was `sent` (unless
the rule is muted or the alert's period is older than `alerts.lookback_days` before the data's
last day); its `resolved` notice once, when the condition stopped holding after the alert was
sent. A failed attempt n is retried on a later run no earlier than attempted_at +
2^(n-1) x `alerts.retry_base_seconds`, at most `alerts.max_attempts` times. A digest channel gets
one message a UTC day listing what is due to it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from fleetledger.alerts import delivery, rules, rules_inference
from fleetledger.alerts.budgets import STATUS_SCHEMA, budget_status
from fleetledger.alerts.inputs import Inputs
from fleetledger.alerts.model import ALERT_COLUMNS, Alert
from fleetledger.alerts.store import State, Store, _apply, read_state
from fleetledger.config import Config
from fleetledger.config_alerts import LOG_CHANNEL, EmailChannel, SlackChannel, WebhookChannel
from fleetledger.explorer_links import explorer_link
from ingest.core.findings import IngestFinding

AnyChannel = SlackChannel | WebhookChannel | EmailChannel

ALERTS_SCHEMA: dict[str, Any] = {
    "alert_id": pl.Utf8,
    "rule": pl.Utf8,
    "kind": pl.Utf8,
    "subject": pl.Utf8,
    "team": pl.Utf8,
    "user_name": pl.Utf8,
    "period": pl.Utf8,
    "threshold": pl.Float64,
    "amount": pl.Float64,
    "currency": pl.Utf8,
    "title": pl.Utf8,
    "message": pl.Utf8,
    "action": pl.Utf8,
    "link": pl.Utf8,
    "data_through": pl.Date,
    "channels": pl.List(pl.Utf8),
    "muted": pl.Boolean,
    "first_raised_at": pl.Datetime("us", "UTC"),
    "resolved_at": pl.Datetime("us", "UTC"),
}
DELIVERIES_SCHEMA: dict[str, Any] = {
    "alert_id": pl.Utf8,
    "channel": pl.Utf8,
    "attempt": pl.Int64,
    "notice": pl.Utf8,
    "attempted_at": pl.Datetime("us", "UTC"),
    "status": pl.Utf8,
    "error": pl.Utf8,
}
assert tuple(ALERTS_SCHEMA) == ALERT_COLUMNS


@dataclass
class Evaluation:
    budget_status: pl.DataFrame
    alerts: list[Alert]
    findings: list[IngestFinding] = field(default_factory=list)
    # alert id -> (muted, channels)
    routes: dict[str, tuple[bool, list[str]]] = field(default_factory=dict)


@dataclass
class Due:
    """One message to send: a channel and the notices it carries (one, or a digest)."""

    channel: str
    to: str
    items: list[tuple[dict[str, Any], str]]
    digest_day: date | None = None


@dataclass
class AlertRun:
    budget_status: pl.DataFrame
    alerts: pl.DataFrame
    deliveries: pl.DataFrame
    due: list[Due]
    findings: list[IngestFinding]
    sent: int = 0
    failed: int = 0


def _team_channels(cfg: Config) -> dict[str, list[str]]:
    return {t.team: list(t.channels) for t in cfg.teams if t.channels}


def evaluate(inputs: Inputs, cfg: Config) -> Evaluation:
    """Budget status and every rule's alerts, with where each alert goes."""
    findings: list[IngestFinding] = []
    through = inputs.data_through
    spend = inputs.spend if inputs.spend is not None else pl.DataFrame()
    if through is None:
        findings.append(IngestFinding("alerts_no_spend", "no spend in the warehouse", "info"))
        status = pl.DataFrame(schema=STATUS_SCHEMA)
    else:
        result = budget_status(
            cfg.budgets,
            spend,
            inputs.forecast,
            reporting_currency=cfg.reporting_currency,
            currency_rates=cfg.currency_rates,
            data_through=through,
        )
        status, findings = result.frame, findings + result.findings
    routes: dict[str, tuple[bool, list[str]]] = {}
    out: list[Alert] = []
    for a in rules.budget_alerts(status, cfg.budgets):
        b = next(b for b in cfg.budgets if b.name == a.rule.split(":")[1])
        routes[a.alert_id] = (False, list(b.channels) or [LOG_CHANNEL])
        out.append(a)
    teams = _team_channels(cfg)
    names = cfg.alerts.rule_names()
    for rule, name in zip(cfg.alerts.rules, names, strict=True):
        if through is None:
            break
        found = _rule_alerts(rule, name, inputs, cfg, through, findings)
        for a in found:
            channels = rule.channels or (teams.get(a.team or "") or [LOG_CHANNEL])
            routes[a.alert_id] = (rule.muted, list(channels))
        out.extend(found)
    return Evaluation(status, out, findings, routes)


def _missing(name: str, mart: str, findings: list[IngestFinding]) -> list[Alert]:
    findings.append(
        IngestFinding(
            f"alert_rule_skipped:{name}",
            f"alert rule {name} is skipped: {mart} is not in the warehouse",
        )
    )
    return []


def _rule_alerts(
    rule: Any, name: str, inputs: Inputs, cfg: Config, through: date, findings: list
) -> list[Alert]:
    if rule.kind == "idle_allocation":
        if inputs.run_hours is None:
            return _missing(name, "int_run_gpu_hour_costs", findings)
        return rules.idle_allocation_alerts(inputs.run_hours, rule, name, through)
    if rule.kind == "gpu_down":
        if inputs.gpu_hours is None:
            return _missing(name, "fct_gpu_hours", findings)
        return rules.gpu_down_alerts(inputs.gpu_hours, rule, name, through)
    if rule.kind == "idle_share":
        if inputs.team_daily is None:
            return _missing(name, "fct_team_gpu_hours_daily", findings)
        return rules.idle_share_alerts(inputs.team_daily, rule, name, through)
    if rule.kind == "xid_spike":
        if inputs.health is None:
            return _missing(name, "fct_fleet_health_daily", findings)
        return rules.xid_spike_alerts(inputs.health, rule, name, through)
    if rule.kind == "spend_anomaly":
        if inputs.forecast is None:
            return _missing(name, "fct_forecast", findings)
        assert inputs.spend is not None
        return rules.spend_anomaly_alerts(inputs.forecast, inputs.spend, rule, name, through)
    if rule.kind in ("inference_cost_rise", "inference_slo"):
        if inputs.service_hours is None:
            return _missing(name, "fct_inference_hourly", findings)
        if rule.kind == "inference_cost_rise":
            return rules_inference.inference_cost_rise_alerts(
                inputs.service_hours, rule, name, through
            )
        return rules_inference.inference_slo_alerts(inputs.service_hours, rule, name, through)
    if inputs.restatements is None:
        return _missing(name, "fct_billing_restatements", findings)
    return rules.restatement_alerts(
        inputs.restatements, rule, name, through, cfg.currency_rates, cfg.reporting_currency
    )


def _link(cfg: Config, alert: Alert) -> str | None:
    """The explorer view that shows the alert's subject (docs/explorer.md, "URLs"), carrying
    the alert id (the Overview shows the alert it names)."""
    base = cfg.alerts.app_url
    if not base:
        return None
    day = alert.period[:10] if alert.kind in ("xid_spike", "spend_anomaly", "gpu_down") else None
    page, params = {
        "budget": ("budgets", {"budget": alert.rule.split(":")[1]}),
        "idle_allocation": ("runs", {"run": alert.subject}),
        "idle_share": ("idle", {"team": alert.team}),
        "gpu_down": ("health", {"start": day}),
        "xid_spike": ("health", {"start": day, "end": day}),
        "spend_anomaly": ("costs", {"start": day, "end": day}),
        "restatement": ("data_health", {}),
        "inference_cost_rise": ("economics", {}),
        "inference_slo": ("economics", {}),
    }.get(alert.kind, ("overview", {}))
    return explorer_link(base, page, alert=alert.alert_id, **params)


def _record(a: Alert, cfg: Config, muted: bool, channels: list[str]) -> dict[str, Any]:
    link = _link(cfg, a)
    return {
        "alert_id": a.alert_id,
        "rule": a.rule,
        "kind": a.kind,
        "subject": a.subject,
        "team": a.team,
        "user_name": a.user_name,
        "period": a.period,
        "threshold": a.threshold,
        "amount": round(a.amount, 2),
        "currency": cfg.reporting_currency,
        "title": a.title,
        "message": a.message(cfg.reporting_currency, link),
        "action": a.action,
        "link": link,
        "data_through": a.data_through.isoformat(),
        "channels": channels,
        "muted": muted,
        "facts": json.loads(json.dumps(a.facts, default=str)),
    }


def _period_day(period: str) -> date | None:
    try:
        return date.fromisoformat(period[:10]) if len(period) >= 10 else None
    except ValueError:
        return None


def _recent(record: dict[str, Any], lookback_days: int) -> bool:
    day = _period_day(record["period"])
    if day is None:  # a month (idle_share): recent while the data is in it
        return record["period"] >= record["data_through"][:7]
    return day >= date.fromisoformat(record["data_through"]) - timedelta(days=lookback_days)


def _retry_ready(
    state: State, aid: str, channel: str, notice: str, cfg: Config, now: datetime
) -> bool:
    attempts = state.attempts_of(aid, channel, notice)
    if any(a.status == "sent" for a in attempts):
        return False
    if not attempts:
        return True
    if len(attempts) >= cfg.alerts.max_attempts:
        return False
    last = attempts[-1]
    wait = (2 ** (len(attempts) - 1)) * cfg.alerts.retry_base_seconds
    return now >= last.attempted_at + timedelta(seconds=wait)


def due_messages(state: State, cfg: Config, now: datetime) -> list[Due]:
    """What to send now, per channel (digest channels batched into one message)."""
    channels: dict[str, AnyChannel] = {ch.name: ch for ch in cfg.alerts.channels}
    per_channel: dict[str, list[tuple[dict[str, Any], str]]] = {}
    for aid, st in sorted(state.alerts.items(), key=lambda kv: kv[1].first_raised_at):
        rec = {**st.record, "first_raised_at": st.first_raised_at, "resolved_at": st.resolved_at}
        if rec.get("muted"):
            continue
        for name in rec.get("channels") or [LOG_CHANNEL]:
            notices = []
            if _recent(rec, cfg.alerts.lookback_days):
                notices.append("raised")
            if st.resolved_at is not None:
                notices.append("resolved")
            for notice in notices:
                if notice == "resolved" and not _sent_before_resolution(state, aid, name):
                    continue
                if _retry_ready(state, aid, name, notice, cfg, now):
                    per_channel.setdefault(name, []).append((rec, notice))
    out: list[Due] = []
    today = now.date()
    for name, items in per_channel.items():
        ch = channels.get(name)
        to = delivery.describe(ch)
        if ch is not None and ch.digest:
            if any(
                a.channel == name and a.status == "sent" and a.attempted_at.date() == today
                for a in state.attempts
            ):
                continue  # today's digest went out: the rest waits for tomorrow's
            out.append(Due(name, to, items, digest_day=today))
        else:
            out.extend(Due(name, to, [item]) for item in items)
    return out


def _sent_before_resolution(state: State, aid: str, channel: str) -> bool:
    st = state.alerts[aid]
    return any(
        a.status == "sent" and st.resolved_recorded_at and a.attempted_at < st.resolved_recorded_at
        for a in state.attempts_of(aid, channel, "raised")
    )


def reconcile(store: Store, ev: Evaluation, cfg: Config, now: datetime) -> None:
    """Record new alerts, resolutions and re-raised alerts in the store."""
    found = set()
    for a in ev.alerts:
        aid = a.alert_id
        found.add(aid)
        muted, channels = ev.routes.get(aid, (False, [LOG_CHANNEL]))
        record = _record(a, cfg, muted, channels)
        known = store.state.alerts.get(aid)
        ended = a.condition_ended_at
        if known is None or (known.resolved_at is not None and ended is None):
            store.raised(aid, record, now)
            known = store.state.alerts[aid]
        else:
            known.record = record  # current figures; not an event (the marts show them)
        if ended is not None and known.resolved_at is None:
            store.resolved(aid, ended, now)
    for aid, st in list(store.state.alerts.items()):
        if aid not in found and st.resolved_at is None:
            store.resolved(aid, now, now)


def run_alerts(
    home: Path,
    inputs: Inputs,
    cfg: Config,
    *,
    now: datetime | None = None,
    dry_run: bool = False,
) -> AlertRun:
    """Evaluate, reconcile with the store and (unless `dry_run`) send what is due, recording
    every attempt. A failed delivery is a finding (`alert_delivery:<channel>`), never an error."""
    now = now or datetime.now(UTC)
    ev = evaluate(inputs, cfg)
    findings = list(ev.findings)
    store = Store(home) if not dry_run else _DryStore(home)
    reconcile(store, ev, cfg, now)
    due = due_messages(store.state, cfg, now)
    sent = failed = 0
    if not dry_run:
        redact = delivery.Redactor.for_config(cfg.alerts)
        channels = {ch.name: ch for ch in cfg.alerts.channels}
        for d in due:
            error = None
            try:
                delivery.send(
                    channels.get(d.channel),
                    d.items,
                    digest_day=d.digest_day,
                    timeout=cfg.alerts.timeout_seconds,
                    redact=redact,
                )
            except delivery.DeliveryError as err:
                error = str(err)
            at = now  # the run's clock (tests pass one; else the wall clock)
            for rec, notice in d.items:
                store.attempt(
                    rec["alert_id"], d.channel, notice, at, "failed" if error else "sent", error
                )
            if error:
                failed += 1
                findings.append(
                    IngestFinding(
                        f"alert_delivery:{d.channel}",
                        f"alert delivery to channel {d.channel} failed ({len(d.items)} "
                        f"notice(s)); retried on the next run: {error}",
                    )
                )
            else:
                sent += 1
    return AlertRun(
        ev.budget_status,
        alerts_frame(store.state),
        deliveries_frame(store.state),
        due,
        findings,
        sent,
        failed,
    )


class _DryStore(Store):
    """A store that records nothing (a dry run changes no state)."""

    def __init__(self, home: Path) -> None:
        self.path = Path("/dev/null")
        self.state = read_state(home)

    def _append(self, ev: dict[str, Any]) -> None:
        _apply(self.state, ev)


def alerts_frame(state: State) -> pl.DataFrame:
    rows = []
    for aid, st in sorted(state.alerts.items()):
        r = st.record
        rows.append(
            {
                **{k: r.get(k) for k in ALERT_COLUMNS},
                "alert_id": aid,
                "data_through": date.fromisoformat(r["data_through"]),
                "first_raised_at": st.first_raised_at,
                "resolved_at": st.resolved_at,
            }
        )
    return pl.DataFrame(rows, schema=ALERTS_SCHEMA) if rows else pl.DataFrame(schema=ALERTS_SCHEMA)


def deliveries_frame(state: State) -> pl.DataFrame:
    rows = [
        {
            "alert_id": a.alert_id,
            "channel": a.channel,
            "attempt": a.attempt,
            "notice": a.notice,
            "attempted_at": a.attempted_at,
            "status": a.status,
            "error": a.error,
        }
        for a in state.attempts
    ]
    if not rows:
        return pl.DataFrame(schema=DELIVERIES_SCHEMA)
    return pl.DataFrame(rows, schema=DELIVERIES_SCHEMA)
