"""Sending notices to channels: Slack-compatible and JSON webhooks (HTTP POST), SMTP email
(STARTTLS, TLS or plain, with optional login) and the run log.

Every network call has a timeout (`alerts.timeout_seconds`). A failure raises `DeliveryError`
whose message has been scrubbed by `Redactor`: every secret value the config holds (channel
URLs, header values, SMTP username and password) is replaced, and any URL left keeps only its
scheme and host, so an error is safe to log, store and show.
"""

from __future__ import annotations

import json
import logging
import re
import smtplib
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterable
from datetime import date
from typing import Any

from fleetledger.alerts import messages
from fleetledger.config_alerts import (
    LOG_CHANNEL,
    Alerts,
    EmailChannel,
    SlackChannel,
    WebhookChannel,
)

log = logging.getLogger("fleetledger.alerts")

REDACTED = "[redacted]"
_URL = re.compile(r"\b([a-z][a-z0-9+.-]*://)(?:[^\s/@]*@)?([^\s/?#:]+)(?::\d+)?[^\s'\"<>)]*", re.I)
#: shorter values are too common to scrub by value (a port, "true")
_MIN_SECRET = 4

Items = list[tuple[dict[str, Any], str]]


class DeliveryError(RuntimeError):
    """A delivery that failed; the message holds no secret."""


class Redactor:
    """Scrubs known secret values and URLs out of text."""

    def __init__(self, secrets: Iterable[str | None]) -> None:
        self._secrets = sorted(
            {s for s in secrets if s and len(s) >= _MIN_SECRET}, key=len, reverse=True
        )

    @classmethod
    def for_config(cls, alerts: Alerts) -> Redactor:
        values: list[str | None] = []
        for ch in alerts.channels:
            if isinstance(ch, SlackChannel | WebhookChannel):
                values.append(ch.url)
            if isinstance(ch, WebhookChannel):
                values.extend(ch.headers.values())
            if isinstance(ch, EmailChannel):
                values.extend([ch.smtp.username, ch.smtp.password])
        return cls(values)

    def __call__(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, REDACTED)
        return _URL.sub(lambda m: f"{m.group(1)}{m.group(2)}/{REDACTED}", text)


def _post_json(url: str, body: dict[str, Any], headers: dict[str, str], timeout: float) -> None:
    data = json.dumps(body, default=str).encode()
    req = urllib.request.Request(
        url,
        data=data,
        method="POST",
        headers={"Content-Type": "application/json", "User-Agent": "fleetledger", **headers},
    )
    with urllib.request.urlopen(req, timeout=timeout) as resp:  # noqa: S310 (http(s) only)
        if not 200 <= resp.status < 300:
            raise DeliveryError(f"HTTP {resp.status}")


def _send_email(ch: EmailChannel, items: Items, day: date | None, timeout: float) -> None:
    msg = messages.email_message(items, ch.from_, ch.to, day)
    s = ch.smtp
    context = ssl.create_default_context()
    smtp: smtplib.SMTP
    if s.security == "ssl":
        smtp = smtplib.SMTP_SSL(s.host, s.port, timeout=timeout, context=context)
    else:
        smtp = smtplib.SMTP(s.host, s.port, timeout=timeout)
    with smtp:
        if s.security == "starttls":
            smtp.starttls(context=context)
        if s.username is not None and s.password is not None:
            smtp.login(s.username, s.password)
        smtp.send_message(msg)


def send(
    channel: SlackChannel | WebhookChannel | EmailChannel | None,
    items: Items,
    *,
    digest_day: date | None,
    timeout: float,
    redact: Redactor,
) -> None:
    """Send one message: one alert's notice, or (with `digest_day`) a digest of `items`.
    `channel` None is the log. Raises DeliveryError (scrubbed) when it fails."""
    try:
        if channel is None:
            for alert, notice in items:
                log.warning(messages.log_line(alert, notice))
        elif isinstance(channel, SlackChannel):
            body = (
                messages.slack_digest(items, digest_day)
                if digest_day
                else messages.slack_alert(*items[0])
            )
            _post_json(channel.url, body, {}, timeout)
        elif isinstance(channel, WebhookChannel):
            body = (
                messages.webhook_digest(items, digest_day)
                if digest_day
                else messages.webhook_alert(*items[0])
            )
            _post_json(channel.url, body, channel.headers, timeout)
        else:
            _send_email(channel, items, digest_day, timeout)
    except DeliveryError as err:
        raise DeliveryError(redact(str(err))) from None
    except urllib.error.HTTPError as err:
        raise DeliveryError(redact(f"HTTP {err.code} {err.reason}")) from None
    except (OSError, smtplib.SMTPException, ValueError) as err:
        raise DeliveryError(redact(f"{type(err).__name__}: {err}")) from None


def describe(channel: SlackChannel | WebhookChannel | EmailChannel | None) -> str:
    """Who a channel reaches, without its secrets (the dry run's `to` column)."""
    if channel is None:
        return f"{LOG_CHANNEL} (the run log)"
    if isinstance(channel, EmailChannel):
        return f"{channel.name} (email to {', '.join(channel.to)})"
    return f"{channel.name} ({channel.kind} webhook)"
