"""The alert state: an append-only JSON Lines log in `$FLEETLEDGER_HOME/alerts/events.jsonl`.

It lives outside the rebuilt warehouse, so a full rebuild keeps it; every run reads it back into
`fct_alerts` and `fct_alert_deliveries`. Three kinds of event, one JSON object a line:

- `raised`: an alert first found (or found again after it was resolved), with its fields;
- `resolved`: its condition no longer holds (`resolved_at`);
- `attempt`: one delivery attempt of an alert's notice (`raised` or `resolved`) to a channel:
  `attempt` (1, 2, ... per alert and channel), `attempted_at`, `status` (`sent` |
  `failed`), `error` (secrets scrubbed before it is written).

Lines are appended and flushed to disk one event at a time (a run holds the home's lock, so
nothing else writes meanwhile); a torn last line (a killed run) is skipped when read.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

STORE_DIR = "alerts"
EVENTS_FILE = "events.jsonl"


def store_path(home: Path) -> Path:
    return home / STORE_DIR / EVENTS_FILE


@dataclass
class Attempt:
    alert_id: str
    channel: str
    notice: str
    attempt: int
    attempted_at: datetime
    status: str
    error: str | None


@dataclass
class AlertState:
    record: dict[str, Any]
    first_raised_at: datetime
    resolved_at: datetime | None = None
    # when the store recorded the resolution (a notice sent before it says "resolved" later)
    resolved_recorded_at: datetime | None = None


@dataclass
class State:
    alerts: dict[str, AlertState] = field(default_factory=dict)
    attempts: list[Attempt] = field(default_factory=list)

    def attempts_of(self, alert_id: str, channel: str, notice: str) -> list[Attempt]:
        return [
            a
            for a in self.attempts
            if a.alert_id == alert_id and a.channel == channel and a.notice == notice
        ]

    def sent(self, alert_id: str, channel: str, notice: str) -> bool:
        return any(a.status == "sent" for a in self.attempts_of(alert_id, channel, notice))


def _time(text: str | None) -> datetime | None:
    if text is None:
        return None
    value = datetime.fromisoformat(text)
    return value if value.tzinfo else value.replace(tzinfo=UTC)


def read_state(home: Path) -> State:
    """The state the log holds (empty when there is none)."""
    state = State()
    path = store_path(home)
    if not path.exists():
        return state
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                ev = json.loads(line)
            except json.JSONDecodeError:
                continue  # a torn last line of a killed run
            _apply(state, ev)
    return state


def _apply(state: State, ev: dict[str, Any]) -> None:
    kind = ev.get("event")
    aid = ev.get("alert_id")
    if kind == "raised":
        at = _time(ev["at"])
        assert at is not None
        known = state.alerts.get(aid)
        if known is None:
            state.alerts[aid] = AlertState(ev["alert"], at)
        else:
            known.record = ev["alert"]
            known.resolved_at = None
            known.resolved_recorded_at = None
    elif kind == "resolved" and aid in state.alerts:
        state.alerts[aid].resolved_at = _time(ev["resolved_at"])
        state.alerts[aid].resolved_recorded_at = _time(ev["at"])
    elif kind == "attempt":
        at = _time(ev["attempted_at"])
        assert at is not None
        state.attempts.append(
            Attempt(
                aid,
                ev["channel"],
                ev.get("notice", "raised"),
                int(ev["attempt"]),
                at,
                ev["status"],
                ev.get("error"),
            )
        )


class Store:
    """Appends events to the log and keeps the in-memory state in step."""

    def __init__(self, home: Path) -> None:
        self.path = store_path(home)
        self.state = read_state(home)

    def _append(self, ev: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(ev, default=str, sort_keys=True) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        _apply(self.state, ev)

    def raised(self, alert_id: str, record: dict[str, Any], at: datetime) -> None:
        self._append(
            {"event": "raised", "alert_id": alert_id, "at": at.isoformat(), "alert": record}
        )

    def resolved(self, alert_id: str, resolved_at: datetime, at: datetime) -> None:
        self._append(
            {
                "event": "resolved",
                "alert_id": alert_id,
                "at": at.isoformat(),
                "resolved_at": resolved_at.isoformat(),
            }
        )

    def attempt(
        self,
        alert_id: str,
        channel: str,
        notice: str,
        attempted_at: datetime,
        status: str,
        error: str | None,
    ) -> Attempt:
        # numbered per alert and channel (the grain of fct_alert_deliveries)
        n = sum(a.alert_id == alert_id and a.channel == channel for a in self.state.attempts) + 1
        self._append(
            {
                "event": "attempt",
                "alert_id": alert_id,
                "channel": channel,
                "notice": notice,
                "attempt": n,
                "attempted_at": attempted_at.isoformat(),
                "status": status,
                "error": error,
            }
        )
        return self.state.attempts[-1]
