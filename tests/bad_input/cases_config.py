"""Corpus cases for `fleetledger.yml` (fleetledger/config.py): unknown keys and kinds, rate
cards, inventory (inline and `inventory_file`), teams, secrets, locations. A config error is a
`ConfigError` naming the file, the key (`rate_cards[0].capex`) or the inventory file's line,
and the problem; nothing is ingested."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from inputs import D1, power_file, power_rows, power_source, sacct_file, sacct_line, source, write
from runner import Case, Expect, Setup

POWER = power_source()
NODE = {"host": "dgx-01", "provider": "onprem", "site": "dc1", "gpus": 8}
CARD = {
    "site": "dc1",
    "hosts": ["dgx-01"],
    "capex": 300000,
    "amortisation_months": 48,
    "power_price_per_kwh": 0.12,
}


def _cfg(**top: Any) -> Any:
    def build(folder: Path) -> Setup:
        return Setup({"sources": [POWER], **top}, env={"FLEETLEDGER_CORPUS_SLACK": SLACK})

    return build


def _yaml(text: str) -> Any:
    def build(folder: Path) -> Setup:
        return Setup({}, raw_yaml=text)

    return build


def _inventory_file(folder: Path) -> Setup:
    write(
        folder / "inventory.csv",
        "host,provider,site,gpus\ndgx-01,onprem,dc1,8\ndgx-02,onprem,dc1,eight\n",
    )
    return Setup({"inventory_file": "inventory.csv"})


def _ingested(config: dict[str, Any], name: str = "power") -> Any:
    def build(folder: Path) -> Setup:
        power_file(folder, power_rows(n=3))
        sacct_file(folder, [sacct_line("10", f"{D1}T01:00:00")])
        return Setup(config, name, (D1,))

    return build


SLACK = "https://hooks.slack.com/services/T0000/B0000/XXXXXXXXXXXX"
CASES = [
    # --- handled on main
    Case(
        "config",
        "unknown-top-level-key",
        _cfg(idle_treshold=0.1),
        Expect("error", (r"fleetledger\.yml", r"idle_treshold", r"(?i)extra|not permitted")),
    ),
    Case(
        "config",
        "unknown-source-key",
        _cfg(sources=[{**POWER, "option": {"format": "meter_csv"}}]),
        Expect("error", (r"sources\[0\]\.option\b", r"(?i)extra|not permitted")),
    ),
    Case(
        "config",
        "unknown-source-kind",
        _cfg(sources=[source("p", "prometheus", "x")]),
        Expect(
            "error", (r"sources\[0\]\.kind", r"unknown source kind 'prometheus'", r"known: .*dcgm")
        ),
    ),
    Case(
        "config",
        "rate-card-as-source-kind",
        _cfg(sources=[source("rc", "rate_card", "x")]),
        Expect("error", (r"sources\[0\]\.kind", r"rate_cards:")),
    ),
    Case(
        "config",
        "duplicate-source-name",
        _cfg(sources=[POWER, POWER]),
        Expect("error", (r"sources", r"'power' is used twice")),
    ),
    Case(
        "config",
        "source-name-with-capitals",
        _cfg(sources=[{**POWER, "name": "Power"}]),
        Expect("error", (r"sources\[0\]\.name", r"(?i)pattern")),
    ),
    Case(
        "config",
        "rate-card-zero-capex",
        _cfg(rate_cards=[{**CARD, "capex": 0}]),
        Expect("error", (r"rate_cards\[0\]\.capex", r"greater than 0")),
    ),
    Case(
        "config",
        "rate-card-without-hosts",
        _cfg(rate_cards=[{k: v for k, v in CARD.items() if k != "hosts"}]),
        Expect("error", (r"rate_cards\[0\]\.hosts", r"(?i)required")),
    ),
    Case(
        "config",
        "rate-card-negative-power-price",
        _cfg(rate_cards=[{**CARD, "power_price_per_kwh": -0.1}]),
        Expect("error", (r"rate_cards\[0\]\.power_price_per_kwh", r"greater than or equal to 0")),
    ),
    Case(
        "config",
        "inventory-unknown-provider",
        _cfg(inventory=[{**NODE, "provider": "ibm"}]),
        Expect("error", (r"inventory\[0\]\.provider", r"'aws'")),
    ),
    Case(
        "config",
        "inventory-negative-gpus",
        _cfg(inventory=[{**NODE, "gpus": -1}]),
        Expect("error", (r"inventory\[0\]\.gpus", r"greater than or equal to 0")),
    ),
    Case(
        "config",
        "inventory-file-bad-row",
        _inventory_file,
        Expect("error", (r"inventory\.csv:3", r"gpus", r"(?i)integer")),
    ),
    Case(
        "config",
        "team-match-typo",
        _cfg(teams=[{"team": "ml", "match": {"slurm_acount": ["ml"]}}]),
        Expect("error", (r"teams\[0\]\.match\.slurm_acount", r"(?i)extra|not permitted")),
    ),
    Case(
        "config",
        "idle-threshold-over-1",
        _cfg(idle_threshold=2),
        Expect("error", (r"idle_threshold", r"less than or equal to 1")),
    ),
    Case(
        "config",
        "currency-lowercase",
        _cfg(reporting_currency="usd"),
        Expect("error", (r"reporting_currency", r"(?i)pattern")),
    ),
    Case(
        "config",
        "partitions-start-not-a-date",
        _cfg(partitions_start="2019-13-01"),
        Expect("error", (r"partitions_start", r"(?i)date")),
    ),
    Case(
        "config",
        "env-var-not-set",
        _cfg(sources=[{**POWER, "location": "${FLEETLEDGER_CORPUS_UNSET_VAR}/p.csv"}]),
        Expect("error", (r"sources\[0\]\.location", r"FLEETLEDGER_CORPUS_UNSET_VAR is not set")),
    ),
    Case(
        "config",
        "not-valid-yaml",
        _yaml("sources: [\n  - {name: a"),
        Expect("error", (r"fleetledger\.yml", r"not valid YAML")),
    ),
    Case(
        "config",
        "top-level-list",
        _yaml("- name: a\n"),
        Expect("error", (r"fleetledger\.yml", r"top level must be a mapping")),
    ),
    Case(
        "config",
        "secret-as-env-reference-loads",
        _cfg(
            alerts={
                "channels": [{"name": "s", "kind": "slack", "url": "${FLEETLEDGER_CORPUS_SLACK}"}]
            }
        ),
        Expect("landed"),
    ),
    # --- issue 11 findings, pending their fixes
    Case(
        "config",
        "inline-secret-under-alerts",
        _cfg(alerts={"channels": [{"name": "s", "kind": "slack", "url": SLACK}]}),
        Expect("error", (r"alerts\.channels\[0\]\.url", r"(?i)secret|\$\{|env")),
    ),
    Case(
        "config",
        "inline-smtp-password",
        _cfg(
            alerts={
                "channels": [
                    {
                        "name": "m",
                        "kind": "email",
                        "to": ["a@example.com"],
                        "smtp": {
                            "host": "smtp.example.com",
                            "username": "${FLEETLEDGER_CORPUS_SLACK}",
                            "password": "hunter2",
                        },
                    }
                ]
            }
        ),
        Expect("error", (r"alerts\.channels\[0\]\.smtp\.password", r"(?i)secret|\$\{|env")),
    ),
    Case(
        "config",
        "inline-token-in-source-options",
        _cfg(
            sources=[
                {
                    **source(
                        "prom",
                        "dcgm",
                        "http://prom:9090",
                        format="prometheus_api",
                        bearer_token="abc123",
                    )
                }
            ]
        ),
        Expect("error", (r"sources\[0\]\.options\.bearer_token", r"(?i)secret|\$\{|env")),
    ),
    Case(
        "config",
        "alerts-channel-unknown-kind",
        _cfg(
            alerts={
                "channels": [{"name": "p", "kind": "pager", "url": "${FLEETLEDGER_CORPUS_SLACK}"}]
            }
        ),
        Expect("error", (r"alerts\.channels\[0\]", r"pager", r"slack")),
    ),
    Case(
        "config",
        "location-outside-the-roots",
        _ingested({"sources": [power_source("../../../../etc/passwd")]}),
        Expect("error", (r"power", r"(?i)outside|root|confin|escape")),
    ),
    Case(
        "config",
        "slurm-option-typo",
        _ingested(
            {"sources": [source("slurm", "slurm", "sacct/sacct-{date}.txt", delimeter="|")]},
            "slurm",
        ),
        Expect("error", (r"slurm", r"delimeter", r"delimiter")),
    ),
]
