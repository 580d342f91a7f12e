"""Secrets in the config are `${ENV_VAR}` references only (issue 11, finding 9: an inline secret
under `alerts` was accepted). Checked on the raw YAML before expansion; errors name the key,
never the value."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetledger.config import ConfigError, load_config
from fleetledger.config_secrets import inline_secrets, is_secret_key

SLACK = "https://hooks.slack.com/services/T000/B000/inline-slack-secret-xyz"


def _load(tmp_path: Path, text: str) -> object:
    path = tmp_path / "fleetledger.yml"
    path.write_text(text)
    return load_config(path)


def test_an_inline_channel_url_is_refused_without_showing_it(tmp_path: Path) -> None:
    """The finding: this file loaded before."""
    text = f"alerts:\n  channels:\n    - {{name: finops, kind: slack, url: '{SLACK}'}}\n"
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text)
    msg = str(err.value)
    assert "alerts.channels[0].url" in msg and "${ENV_VAR}" in msg
    assert "inline-slack-secret-xyz" not in msg and "hooks.slack.com" not in msg


def test_a_referenced_secret_loads_and_is_expanded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SLACK_WEBHOOK_URL", SLACK)
    monkeypatch.setenv("SMTP_USER", "fl")
    monkeypatch.setenv("SMTP_PASSWORD", "pw-secret-123")
    cfg = _load(
        tmp_path,
        "alerts:\n  channels:\n"
        "    - {name: finops, kind: slack, url: '${SLACK_WEBHOOK_URL}'}\n"
        "    - {name: leads, kind: email, to: [a@example.com], from: f@example.com,\n"
        "       smtp: {host: smtp.example.com, username: '${SMTP_USER}',"
        " password: '${SMTP_PASSWORD}'}}\n",
    )
    slack, email = cfg.alerts.channels  # type: ignore[attr-defined]
    assert slack.url == SLACK
    assert (email.smtp.username, email.smtp.password) == ("fl", "pw-secret-123")


def test_a_missing_variable_names_the_variable_and_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("NO_SUCH_SLACK_URL", raising=False)
    with pytest.raises(ConfigError) as err:
        _load(
            tmp_path,
            "alerts:\n  channels:\n    - {name: s, kind: slack, url: '${NO_SUCH_SLACK_URL}'}\n",
        )
    assert str(err.value).endswith(
        "alerts.channels[0].url: environment variable NO_SUCH_SLACK_URL is not set"
    )


@pytest.mark.parametrize(
    ("text", "key"),
    [
        # any key named like a secret in a source's options
        (
            "sources:\n  - {name: p, kind: dcgm, location: 'http://prom:9090',"
            " options: {format: prometheus_api, bearer_token: tok-inline-1}}\n",
            "sources[0].options.bearer_token",
        ),
        # SMTP credentials
        (
            "alerts:\n  channels:\n    - {name: m, kind: email, to: [a@b.c], from: f@b.c,\n"
            "       smtp: {host: h, username: fleet, password: '${P}'}}\n",
            "alerts.channels[0].smtp.username",
        ),
        # a secret partly inline is inline
        (
            "alerts:\n  channels:\n"
            "    - {name: h, kind: webhook, url: 'https://h.example/${PATH_PART}'}\n",
            "alerts.channels[0].url",
        ),
        # a webhook header named like a credential
        (
            "alerts:\n  channels:\n    - {name: h, kind: webhook, url: '${U}',"
            " headers: {Authorization: 'Bearer tok-inline-1'}}\n",
            "alerts.channels[0].headers.Authorization",
        ),
        # a number is inline too; camelCase and dashes split into words
        ("alerts:\n  apiKey: 12345\n", "alerts.apiKey"),
        # the password of a URL location
        (
            "sources:\n  - {name: p, kind: dcgm, location: 'https://u:tok-inline-1@prom:9090',"
            " options: {format: prometheus_api}}\n",
            "sources[0].location (the password in the URL)",
        ),
    ],
)
def test_inline_secrets_are_refused_naming_the_key(tmp_path: Path, text: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, text)
    msg = str(err.value)
    assert key in msg
    assert "tok-inline-1" not in msg and "12345" not in msg and "fleet," not in msg


def test_which_keys_are_secrets() -> None:
    for name in ("api_key", "access_key", "secret", "bearer_token", "password", "X-Api-Key"):
        assert is_secret_key(name), name
    for name in ("credentials_file", "key_path", "monkey", "keyboard_layout", "node_label"):
        assert not is_secret_key(name), name


def test_user_names_are_not_read_as_secret_fields() -> None:
    """A team's label key `api_key`, a kind rule field, a site called `key`: data, not fields."""
    raw = {
        "teams": [
            {"team": "t", "match": {"k8s_label": {"api_key": "x"}, "cloud_tag": {"token": "y"}}}
        ],
        "kind_rules": [{"kind": "batch", "match": {"label:secret": "z"}}],
        "sites": {"key": {"idle_threshold": 0.1}},
    }
    assert inline_secrets(raw) == []
    assert inline_secrets({"sites": {"dc1": {"password": "p"}}}) == ["sites.dc1.password"]


def test_a_yaml_error_does_not_quote_the_line(tmp_path: Path) -> None:
    """PyYAML quotes the offending line: it may hold the secret being typed."""
    with pytest.raises(ConfigError) as err:
        _load(tmp_path, "alerts:\n  channels:\n    - {name: s, url: 'tok-inline-1\n")
    msg = str(err.value)
    assert "not valid YAML" in msg and "line " in msg and "tok-inline-1" not in msg
