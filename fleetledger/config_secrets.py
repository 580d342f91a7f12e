"""Secrets in `fleetledger.yml` are `${ENV_VAR}` references, never inline values.

`inline_secrets(raw)` runs on the raw YAML, before `${...}` references are expanded, and returns
the key path of every secret written inline (`alerts.channels[0].url`); the loader refuses the
file naming those keys, never their values. A secret field is:

- any key named like a secret anywhere in the file, sources' options included: one whose words
  (split at `_`, `-`, `.` and camelCase) include token, secret, password, passwd, key, apikey,
  credential(s) or authorization (`api_key`, `access_key`, `bearer_token`, `X-Api-Key`); a key
  ending in `_file`, `_path` or `_dir` names a file that holds a secret and is not one;
- a channel URL (`alerts.channels[].url`: Slack and webhook URLs carry their token) and the SMTP
  credentials (`alerts.channels[].smtp.username` / `password`);
- the password of a URL location written as `scheme://user:password@host`.

Its value must be exactly one reference (`"${SLACK_WEBHOOK_URL}"`) or null; a list or mapping
under a secret key must hold only references. Keys that are the user's own names (label and tag
keys of team rules, kind-rule fields, site and meter names) are not read as field names.
"""

from __future__ import annotations

import re
from typing import Any

_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")
_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
SECRET_WORDS = frozenset(
    {
        "token",
        "secret",
        "password",
        "passwd",
        "key",
        "apikey",
        "credential",
        "credentials",
        "authorization",
    }
)
_NOT_SECRET_SUFFIXES = ("_file", "_path", "_dir")
_URL_PASSWORD = re.compile(r"^[a-z][a-z0-9+.-]*://[^/@:]*:([^/@]+)@")

#: mappings whose keys are the user's names (data), not field names: (parent path pattern)
_DATA_KEYS = (
    re.compile(r"^teams\[\d+\]\.match\.(k8s_label|cloud_tag)$"),
    re.compile(r"^kind_rules\[\d+\]\.match$"),
    re.compile(r"^sites$"),
    re.compile(r"^sites\.[^.]+\.meter_parents$"),
    re.compile(r"^currency_rates$"),
)
_CHANNEL_SECRETS = re.compile(r"^alerts\.channels\[\d+\]\.(url|smtp\.username|smtp\.password)$")


def is_secret_key(name: str) -> bool:
    """Whether a key is named like a secret (module docstring)."""
    if name.lower().endswith(_NOT_SECRET_SUFFIXES):
        return False
    words = {w.lower() for w in _WORDS.findall(name)}
    return bool(words & SECRET_WORDS)


def is_reference(value: Any) -> bool:
    """Whether a value is exactly one `${ENV_VAR}` reference."""
    return isinstance(value, str) and _REFERENCE.fullmatch(value.strip()) is not None


def _all_references(value: Any) -> bool:
    if value is None:
        return True
    if isinstance(value, dict):
        return all(_all_references(v) for v in value.values())
    if isinstance(value, list):
        return all(_all_references(v) for v in value)
    return is_reference(value)


def inline_secrets(raw: Any, key: str = "") -> list[str]:
    """The key path of every secret written inline in the raw config (module docstring)."""
    found: list[str] = []
    if isinstance(raw, dict):
        data_keys = any(p.match(key) for p in _DATA_KEYS)
        for k, v in raw.items():
            path = f"{key}.{k}" if key else str(k)
            if not data_keys and (is_secret_key(str(k)) or _CHANNEL_SECRETS.match(path)):
                if not _all_references(v):
                    found.append(path)
                continue
            if str(k) == "location" and isinstance(v, str):
                m = _URL_PASSWORD.match(v)
                if m and not is_reference(m.group(1)):
                    found.append(f"{path} (the password in the URL)")
                    continue
            found.extend(inline_secrets(v, path))
    elif isinstance(raw, list):
        for i, v in enumerate(raw):
            found.extend(inline_secrets(v, f"{key}[{i}]"))
    return found
