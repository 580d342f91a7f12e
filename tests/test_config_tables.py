"""Config lands as `config_*` tables the dbt project reads: per-site settings (the site's own
idle threshold and utilisation signal, else the top-level values; a threshold of 0 is a value,
not a missing one) and team rules (cloud accounts for bill lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetledger.config import ConfigError, parse_config
from fleetledger.config_tables import config_frames

INVENTORY = [
    {
        "host": h,
        "resource_id": h,
        "provider": "onprem",
        "site": site,
        "instance_type": "dgx-h100",
        "gpus": 8,
        "gpu_model": "H100",
    }
    for h, site in (("a", "lab"), ("b", "cloud"), ("c", "hpc"))
]


def test_site_overrides_and_top_level_defaults(tmp_path: Path):
    cfg = parse_config(
        {
            "idle_threshold": 0.1,
            "utilization_signal": "gpu_util",
            "inventory": INVENTORY,
            "sites": {
                "lab": {"idle_threshold": 0.0},
                "hpc": {"utilization_signal": "sm_active", "idle_threshold": 0.2},
            },
        },
        tmp_path / "fleetledger.yml",
    )
    rows = {r["site"]: r for r in config_frames(cfg)["config_settings"].to_dicts()}
    assert rows["lab"]["idle_threshold"] == 0.0
    assert rows["lab"]["utilization_signal"] == "gpu_util"
    assert rows["cloud"]["idle_threshold"] == 0.1
    assert rows["cloud"]["utilization_signal"] == "gpu_util"
    assert rows["hpc"]["idle_threshold"] == 0.2
    assert rows["hpc"]["utilization_signal"] == "sm_active"


def test_default_signal_is_auto(tmp_path: Path):
    cfg = parse_config({"inventory": INVENTORY[:1]}, tmp_path / "fleetledger.yml")
    (row,) = config_frames(cfg)["config_settings"].to_dicts()
    assert row["utilization_signal"] == "auto" and row["idle_threshold"] == 0.05


def test_unknown_signal_names_the_key(tmp_path: Path):
    with pytest.raises(ConfigError) as err:
        parse_config(
            {"sites": {"lab": {"utilization_signal": "dram_active"}}},
            tmp_path / "fleetledger.yml",
        )
    assert "sites.lab.utilization_signal" in str(err.value)


def test_cloud_account_rules_land_with_their_team_priority(tmp_path: Path):
    cfg = parse_config(
        {
            "teams": [
                {"team": "serving", "match": {"cloud_tag": {"team": "serving"}}},
                {"team": "data", "match": {"cloud_account": ["123456789012", "ml-data"]}},
            ]
        },
        tmp_path / "fleetledger.yml",
    )
    rules = config_frames(cfg)["config_team_rules"].to_dicts()
    accounts = [
        (r["priority"], r["team"], r["rule_value"])
        for r in rules
        if r["rule_type"] == "cloud_account"
    ]
    assert accounts == [(1, "data", "123456789012"), (1, "data", "ml-data")]


def test_health_settings_reach_dbt_as_vars(tmp_path: Path):
    from orchestration.dbt import _health_vars
    from orchestration.resources import FleetResource

    fleet = FleetResource(home=str(tmp_path))
    # no config yet: the defaults docs/metrics.md states
    assert _health_vars(fleet) == {
        "straggler_margin": 0.2,
        "straggler_min_seconds": 1800,
        "straggler_bucket_seconds": 60,
    }
    (tmp_path / "fleetledger.yml").write_text(
        "health: {straggler_margin: 0.35, straggler_min_seconds: 600}\n"
    )
    assert _health_vars(fleet) == {
        "straggler_margin": 0.35,
        "straggler_min_seconds": 600,
        "straggler_bucket_seconds": 60,
    }
    (tmp_path / "fleetledger.yml").write_text("health: {straggler_margin: 1.5}\n")
    with pytest.raises(ConfigError, match="health.straggler_margin"):
        _health_vars(fleet)
