"""What each channel kind receives (docs/alerts.md, "Channels"), built from `fct_alerts` rows.

- Slack (incoming webhook): `{"text": <fallback>, "blocks": [<Block Kit blocks>]}`;
- webhook: `WEBHOOK_SCHEMA` (one alert) or `DIGEST_SCHEMA` (a digest): plain JSON figures;
- email: a plain-text message, the title as the subject;
- log: one line per alert.

A `notice` is `raised` (the alert itself) or `resolved` (its condition no longer holds, said
once after the alert was sent).
"""

from __future__ import annotations

from datetime import date
from email.message import EmailMessage
from typing import Any

from fleetledger.alerts.model import ALERT_COLUMNS

WEBHOOK_SCHEMA = "fleetledger.alert/v1"
DIGEST_SCHEMA = "fleetledger.alert-digest/v1"

#: the alert fields a webhook gets: fct_alerts' columns but the routing (channels, muted)
WEBHOOK_FIELDS = tuple(c for c in ALERT_COLUMNS if c not in ("channels", "muted"))


def headline(alert: dict[str, Any], notice: str) -> str:
    prefix = "Resolved: " if notice == "resolved" else ""
    return f"{prefix}{alert['title']}"


def text(alert: dict[str, Any], notice: str) -> str:
    """The alert as one paragraph (log lines, Slack fallback, email body)."""
    if notice == "resolved":
        return (
            f"{headline(alert, notice)}: the condition no longer holds (resolved at "
            f"{alert['resolved_at']}). Alert {alert['alert_id']}, period {alert['period']}."
        )
    return f"{alert['message']} (alert {alert['alert_id']})"


def _json_value(value: Any) -> Any:
    if isinstance(value, date):
        return value.isoformat()
    return value


def webhook_alert(alert: dict[str, Any], notice: str) -> dict[str, Any]:
    body = {k: _json_value(alert.get(k)) for k in WEBHOOK_FIELDS}
    return {"schema": WEBHOOK_SCHEMA, "notice": notice, **body, "facts": alert.get("facts") or {}}


def webhook_digest(items: list[tuple[dict[str, Any], str]], day: date) -> dict[str, Any]:
    return {
        "schema": DIGEST_SCHEMA,
        "day": day.isoformat(),
        "alerts": [webhook_alert(a, n) for a, n in items],
    }


def _section(markdown: str) -> dict[str, Any]:
    return {"type": "section", "text": {"type": "mrkdwn", "text": markdown[:2900]}}


def _alert_blocks(alert: dict[str, Any], notice: str) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = [_section(f"*{headline(alert, notice)}*\n{text(alert, notice)}")]
    fields = [
        f"*Amount*\n{alert['amount']:,.2f} {alert['currency']}",
        f"*Period*\n{alert['period']}",
        f"*Team*\n{alert.get('team') or '-'}",
        f"*Data through*\n{_json_value(alert['data_through'])}",
    ]
    blocks.append({"type": "section", "fields": [{"type": "mrkdwn", "text": f} for f in fields]})
    if alert.get("link"):
        blocks.append(
            {
                "type": "actions",
                "elements": [
                    {
                        "type": "button",
                        "text": {"type": "plain_text", "text": "Open in fleetledger"},
                        "url": alert["link"],
                    }
                ],
            }
        )
    blocks.append(
        {"type": "context", "elements": [{"type": "mrkdwn", "text": f"alert {alert['alert_id']}"}]}
    )
    return blocks


def slack_alert(alert: dict[str, Any], notice: str) -> dict[str, Any]:
    return {"text": text(alert, notice), "blocks": _alert_blocks(alert, notice)}


def slack_digest(items: list[tuple[dict[str, Any], str]], day: date) -> dict[str, Any]:
    title = f"fleetledger: {len(items)} alert(s) on {day.isoformat()}"
    blocks: list[dict[str, Any]] = [
        {"type": "header", "text": {"type": "plain_text", "text": title[:150]}}
    ]
    for alert, notice in items[:45]:  # Slack takes at most 50 blocks
        blocks.append(_section(f"*{headline(alert, notice)}*\n{text(alert, notice)}"))
    lines = "\n".join(f"- {headline(a, n)}" for a, n in items)
    return {"text": f"{title}\n{lines}", "blocks": blocks}


def email_message(
    items: list[tuple[dict[str, Any], str]], sender: str, to: list[str], day: date | None
) -> EmailMessage:
    msg = EmailMessage()
    if day is None:
        alert, notice = items[0]
        msg["Subject"] = f"[fleetledger] {headline(alert, notice)}"
    else:
        msg["Subject"] = f"[fleetledger] {len(items)} alert(s) on {day.isoformat()}"
    msg["From"] = sender
    msg["To"] = ", ".join(to)
    parts = []
    for alert, notice in items:
        body = f"{headline(alert, notice)}\n\n{text(alert, notice)}"
        if alert.get("link"):
            body += f"\n\n{alert['link']}"
        parts.append(body)
    msg.set_content("\n\n----\n\n".join(parts) + "\n")
    return msg


def log_line(alert: dict[str, Any], notice: str) -> str:
    return f"alert [{alert['rule']}] {text(alert, notice)}"
