"""What an alert is (DESIGN.md, "Forecasts, budgets and alerts"): the rows of `fct_alerts`.

An alert is identified by `alert_id`, a stable hash of (rule, subject, period, threshold): the
same condition found again on a later run or after a full rebuild has the same id, so it is sent
once per channel. `rule` is `budget:<name>:<actual|forecast>` or `<kind>:<rule name>`.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from datetime import date, datetime

#: the columns of fct_alerts, in order (docs/alerts.md)
ALERT_COLUMNS = (
    "alert_id",
    "rule",
    "kind",
    "subject",
    "team",
    "user_name",
    "period",
    "threshold",
    "amount",
    "currency",
    "title",
    "message",
    "action",
    "link",
    "data_through",
    "channels",
    "muted",
    "first_raised_at",
    "resolved_at",
)


def alert_id(rule: str, subject: str, period: str, threshold: float | None) -> str:
    """The stable id of an alert: sha256 of its rule, subject, period and threshold (16 hex)."""
    thr = "" if threshold is None else repr(float(threshold))
    text = "\x1f".join((rule, subject, period, thr))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


@dataclass
class Alert:
    """One alert as a rule raised it on this evaluation.

    `condition_ended_at` is when the condition stopped holding when the data shows it (an idle
    episode that ended, a GPU back up); None while it holds."""

    rule: str
    kind: str
    subject: str
    period: str
    threshold: float | None
    amount: float
    title: str
    what: str
    action: str
    data_through: date
    team: str | None = None
    user_name: str | None = None
    facts: dict[str, object] = field(default_factory=dict)
    condition_ended_at: datetime | None = None

    @property
    def alert_id(self) -> str:
        return alert_id(self.rule, self.subject, self.period, self.threshold)

    def message(self, currency: str, link: str | None = None) -> str:
        """The alert in plain words: who, what, how much, how fresh, what to do, a link."""
        who = []
        if self.team:
            who.append(f"team {self.team}")
        if self.user_name:
            who.append(f"user {self.user_name}")
        owner = f" ({', '.join(who)})" if who else ""
        fresh = "spend" if self.kind in ("budget", "spend_anomaly", "restatement") else "data"
        parts = [
            f"{self.title}{owner}: {self.what}",
            f"At stake: {money(self.amount, currency)}.",
            f"{fresh.capitalize()} through {self.data_through.isoformat()}.",
            f"What to do: {self.action}",
        ]
        if self.condition_ended_at is not None:
            parts.append(f"Resolved: the condition ended at {_stamp(self.condition_ended_at)}.")
        if link:
            parts.append(f"See {link}")
        return " ".join(parts)


def money(value: float, currency: str) -> str:
    sign = "-" if value < 0 else ""
    return f"{sign}{abs(value):,.2f} {currency}"


def _stamp(value: datetime) -> str:
    return value.strftime("%Y-%m-%d %H:%M UTC")


def stamp(value: datetime) -> str:
    """A UTC time as alert messages write it."""
    return _stamp(value)
