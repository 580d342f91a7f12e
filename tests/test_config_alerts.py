"""DESIGN's `alerts` and `budgets` config schema (issue 11, finding 9): typed, validated when the
config loads, errors naming the key. Delivery is the alerts issue's."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from fleetledger.config import Config, ConfigError, load_config
from fleetledger.config_alerts import (
    EmailChannel,
    GpuDownRule,
    IdleAllocationRule,
    SlackChannel,
    WebhookChannel,
)
from fleetledger.config_tables import config_frames

DESIGN_EXAMPLE = """\
budgets:
  - name: research-monthly
    scope: {team: research}
    amount: 40000
    period: month
    thresholds: [0.5, 0.8, 1.0]
    basis: [actual, forecast]
    channels: [finops-slack]
    include_shared_idle: false
  - {name: aws-quarter, scope: {provider: aws}, amount: 90000, currency: EUR, period: quarter,
     basis: [forecast]}
  - {name: everything, amount: 250000}
alerts:
  app_url: https://fleetledger.example/
  channels:
    - {name: finops-slack, kind: slack, url: "${SLACK_WEBHOOK_URL}"}
    - {name: hooks, kind: webhook, url: "${ALERT_WEBHOOK_URL}", digest: true}
    - {name: leads, kind: email, to: [leads@example.com], from: fleetledger@example.com,
       smtp: {host: smtp.example.com, port: 587, security: starttls,
              username: "${SMTP_USER}", password: "${SMTP_PASSWORD}"}}
  rules:
    - {kind: idle_allocation, min_hours: 8, channels: [finops-slack]}
    - {kind: idle_share, max_share: 0.25, channels: [leads]}
    - {kind: xid_spike, factor: 3, channels: [hooks]}
    - {kind: gpu_down, min_hours: 4, channels: [hooks, log]}
    - {kind: gpu_down, name: long-outage, min_hours: 24, muted: true}
    - {kind: spend_anomaly, min_impact: 500, channels: [finops-slack]}
"""


@pytest.fixture(autouse=True)
def _env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SLACK_WEBHOOK_URL", "https://hooks.slack.com/services/T/B/s3cr3t")
    monkeypatch.setenv("ALERT_WEBHOOK_URL", "https://hooks.example/fleet")
    monkeypatch.setenv("SMTP_USER", "fleet")
    monkeypatch.setenv("SMTP_PASSWORD", "pw")


def _load(tmp_path: Path, text: str) -> Config:
    path = tmp_path / "fleetledger.yml"
    path.write_text(text)
    return load_config(path)


def test_design_example_loads_as_typed_objects(tmp_path: Path) -> None:
    cfg = _load(tmp_path, DESIGN_EXAMPLE)
    slack, hooks, leads = cfg.alerts.channels
    assert isinstance(slack, SlackChannel) and isinstance(hooks, WebhookChannel)
    assert isinstance(leads, EmailChannel)
    assert hooks.digest and not slack.digest
    assert leads.from_ == "fleetledger@example.com" and leads.smtp.security == "starttls"
    assert isinstance(cfg.alerts.rules[0], IdleAllocationRule)
    assert isinstance(cfg.alerts.rules[3], GpuDownRule) and cfg.alerts.rules[3].min_hours == 4
    # default names <kind>-<n>, counting the rules of each kind
    assert cfg.alerts.rule_names() == [
        "idle_allocation-1",
        "idle_share-1",
        "xid_spike-1",
        "gpu_down-1",
        "long-outage",
        "spend_anomaly-1",
    ]
    research, aws, everything = cfg.budgets
    assert (research.scope.kind(), research.scope.value(), research.team) == (
        "team",
        "research",
        "research",
    )
    assert (aws.scope.kind(), aws.period, aws.currency, aws.basis) == (
        "provider",
        "quarter",
        "EUR",
        ["forecast"],
    )
    assert (everything.scope.kind(), everything.thresholds, everything.basis) == (
        "total",
        [0.5, 0.8, 1.0],
        ["actual", "forecast"],
    )
    assert cfg.findings == []
    budgets = config_frames(cfg)["config_budgets"]
    assert budgets.select("budget", "scope_kind", "scope_value", "amount", "currency").rows() == [
        ("research-monthly", "team", "research", 40000.0, "USD"),
        ("aws-quarter", "provider", "aws", 90000.0, "EUR"),
        ("everything", "total", None, 250000.0, "USD"),
    ]


def test_the_older_budget_form_is_accepted_with_a_deprecation(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="fleetledger.config"):
        cfg = _load(tmp_path, "budgets:\n  - {name: r, team: research, monthly_amount: 40000}\n")
    (b,) = cfg.budgets
    assert (b.scope.team, b.amount, b.period, b.legacy_form) == ("research", 40000, "month", True)
    (finding,) = cfg.findings
    assert (finding.check, finding.severity) == ("config_deprecated", "info")
    assert "budgets[0] (r)" in finding.message and "deprecated" in caplog.text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "alerts:\n  channels:\n    - {name: x, kind: teams, url: '${SLACK_WEBHOOK_URL}'}\n",
            "alerts.channels[0]: Input tag 'teams' found using 'kind' does not match",
        ),
        (
            "alerts:\n  channels:\n    - {name: x, kind: slack}\n",
            "alerts.channels[0].slack.url: Field required",
        ),
        (
            "alerts:\n  channels:\n    - {name: x, kind: slack, url: '${SMTP_USER}'}\n",
            "alerts.channels[0].slack.url: url must be an http:// or https:// URL",
        ),
        (
            "alerts:\n  channels:\n    - {name: m, kind: email, to: [], from: a@b.c,"
            " smtp: {host: h}}\n",
            "alerts.channels[0].email.to: List should have at least 1 item",
        ),
        (
            "alerts:\n  channels:\n    - {name: m, kind: email, to: [a@b.c], from: a@b.c,"
            " smtp: {host: h, password: '${SMTP_PASSWORD}'}}\n",
            "smtp: give both username and password, or neither",
        ),
        (
            "alerts:\n  channels:\n    - {name: m, kind: email, to: [a@b.c], from: a@b.c,"
            " smtp: {host: h, security: tls}}\n",
            "alerts.channels[0].email.smtp.security: Input should be 'starttls', 'ssl' or 'none'",
        ),
        (
            "alerts:\n  channels:\n    - {name: s, kind: slack, url: '${SLACK_WEBHOOK_URL}'}\n"
            "    - {name: s, kind: webhook, url: '${ALERT_WEBHOOK_URL}'}\n",
            "alerts: channels[1]: channel name 's' is used twice",
        ),
        (
            "alerts:\n  rules:\n    - {kind: gpu_down, channels: [pager]}\n",
            "alerts: rules[0].channels[0]: no channel named 'pager' in alerts.channels (log)",
        ),
        (
            "alerts:\n  rules:\n    - {kind: gpu_down, min_hours: 0}\n",
            "alerts.rules[0].gpu_down.min_hours: Input should be greater than 0",
        ),
        (
            "alerts:\n  rules:\n    - {kind: idle_share, max_shar: 0.3}\n",
            "alerts.rules[0].idle_share.max_shar: Extra inputs are not permitted",
        ),
        (
            "alerts:\n  rules:\n    - {kind: gpu_down}\n    - {kind: gpu_down, name: gpu_down-1}\n",
            "alerts: rules[1]: rule name 'gpu_down-1' is used twice",
        ),
        (
            "budgets:\n  - {name: b, amount: 10, channels: [nowhere]}\n",
            "<root>: budgets[0].channels[0]: no channel named 'nowhere'",
        ),
        (
            "budgets:\n  - {name: b, amount: 10}\n  - {name: b, amount: 20}\n",
            "<root>: budgets[1]: budget name 'b' is used twice",
        ),
        (
            "budgets:\n  - {name: b, amount: 10, scope: {team: t, provider: aws}}\n",
            "budgets[0].scope: a scope names one of team, provider, sub_account",
        ),
        (
            "budgets:\n  - {name: b, amount: 10, period: week}\n",
            "budgets[0].period: Input should be 'month' or 'quarter'",
        ),
        (
            "budgets:\n  - {name: b, amount: 10, thresholds: [0.8, 0.5]}\n",
            "budgets[0].thresholds: thresholds must be increasing",
        ),
        (
            "budgets:\n  - {name: b, amount: 10, include_shared_idle: true}\n",
            "budgets[0]: include_shared_idle is for team budgets",
        ),
        (
            "budgets:\n  - {name: b, team: t, monthly_amount: 10, period: quarter}\n",
            "budgets[0]: the older form (team, monthly_amount) cannot be mixed with period",
        ),
    ],
)
def test_schema_errors_name_the_key(tmp_path: Path, text: str, expected: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text)
    assert expected in str(err.value)
    # the expanded secrets never appear in an error
    assert "s3cr3t" not in str(err.value) and "hooks.example" not in str(err.value)
