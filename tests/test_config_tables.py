"""Config lands as `config_*` tables the dbt project reads: per-site settings (the site's own
idle threshold and utilisation signal, else the top-level values; a threshold of 0 is a value,
not a missing one) and team rules (cloud accounts for bill lines)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pytest

from fleetledger.config import ConfigError, parse_config
from fleetledger.config_tables import config_frames, write_config_tables

REPO = Path(__file__).resolve().parents[1]

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
    from orchestration.dbt import _config_vars
    from orchestration.resources import FleetResource

    health = ("straggler_margin", "straggler_min_seconds", "straggler_bucket_seconds")
    fleet = FleetResource(home=str(tmp_path))
    # no config yet: the defaults docs/metrics.md states
    got = _config_vars(fleet)
    assert {k: got[k] for k in health} == {
        "straggler_margin": 0.2,
        "straggler_min_seconds": 1800,
        "straggler_bucket_seconds": 60,
    }
    assert got["release_idle_min_days"] == 2 and got["inference_output_token_weight"] == 4
    (tmp_path / "fleetledger.yml").write_text(
        "health: {straggler_margin: 0.35, straggler_min_seconds: 600}\n"
        "economics: {release_idle_min_days: 5, commitment_discount_rates: {aws: 0.4}}\n"
    )
    got = _config_vars(fleet)
    assert {k: got[k] for k in health} == {
        "straggler_margin": 0.35,
        "straggler_min_seconds": 600,
        "straggler_bucket_seconds": 60,
    }
    assert got["release_idle_min_days"] == 5
    assert got["commitment_discount_rates"] == {"aws": 0.4}
    assert got["mig_profiles"][0] == {"profile": "1g.10gb", "slices": 1, "memory_gb": 10}
    (tmp_path / "fleetledger.yml").write_text("health: {straggler_margin: 1.5}\n")
    with pytest.raises(ConfigError, match="health.straggler_margin"):
        _config_vars(fleet)


def test_economics_defaults_equal_the_dbt_project_vars():
    # the config's defaults and dbt_project.yml's must not drift apart
    import yaml

    from fleetledger.config_economics import EconomicsSettings

    project = yaml.safe_load((REPO / "dbt_project" / "dbt_project.yml").read_text())["vars"]
    for key, value in EconomicsSettings().dbt_vars().items():
        assert project[key] == value, key


@pytest.mark.parametrize(
    ("economics", "message"),
    [
        ({"mig_profiles": [{"profile": "8g.90gb", "slices": 8, "memory_gb": 90}]}, "8g.90gb"),
        ({"commitment_discount_rates": {"aws": 1.2}}, "commitment_discount_rates"),
        ({"recommendation_medium_confidence_days": 30}, "medium_confidence_days"),
        ({"release_idle_min_dayz": 2}, "release_idle_min_dayz"),
    ],
)
def test_economics_settings_are_checked_when_the_config_loads(
    economics: dict, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        parse_config({"economics": economics}, Path("fleetledger.yml"))


def test_straggler_bucket_must_divide_a_day() -> None:
    # buckets are stored by day: 86400 / 300 = 288 buckets a day is fine, 86400 / 7 is not whole
    path = Path("fleetledger.yml")
    config = parse_config({"health": {"straggler_bucket_seconds": 300}}, path)
    assert config.health.dbt_vars()["straggler_bucket_seconds"] == 300
    with pytest.raises(ConfigError, match="must divide a day .* got 7"):
        parse_config({"health": {"straggler_bucket_seconds": 7}}, path)


def test_a_host_listed_twice_or_a_resource_on_two_hosts_is_refused(tmp_path: Path) -> None:
    # a host twice would give its slots two GPUs each; a resource id on two hosts would count
    # each of its bill lines for both: the config does not load, naming both entries
    twice = [*INVENTORY, {**INVENTORY[1], "resource_id": "b2"}]
    with pytest.raises(ConfigError) as err:
        parse_config({"inventory": twice}, tmp_path / "fleetledger.yml")
    assert str(err.value) == (
        f"{tmp_path / 'fleetledger.yml'}: inventory: host 'b' is listed twice: inventory[1] and "
        "inventory[3]"
    )
    (tmp_path / "nodes.csv").write_text(
        "host,resource_id,provider,site,gpus\nd,d,onprem,lab,8\ne,a,onprem,lab,8\n"
    )
    with pytest.raises(ConfigError) as err:
        parse_config(
            {"inventory": INVENTORY, "inventory_file": "nodes.csv"}, tmp_path / "fleetledger.yml"
        )
    assert str(err.value) == (
        f"{tmp_path / 'fleetledger.yml'}: inventory: resource_id 'a' is given to hosts a and e "
        f"(each bill line of it would be counted for both): inventory[0] and "
        f"{tmp_path / 'nodes.csv'}:3"
    )
    # two on-prem nodes without a resource id are two nodes, not one resource
    bare = [{k: v for k, v in n.items() if k != "resource_id"} for n in INVENTORY]
    assert len(parse_config({"inventory": bare}, tmp_path / "fleetledger.yml").inventory) == 3


def test_gpus_a_node_at_most_64(tmp_path: Path) -> None:
    big = [{**INVENTORY[0], "gpus": 65}]
    with pytest.raises(
        ConfigError, match=r"inventory\[0\]\.gpus: Input should be less than or equal to 64"
    ):
        parse_config({"inventory": big}, tmp_path / "fleetledger.yml")
    assert parse_config({"inventory": [{**INVENTORY[0], "gpus": 64}]}, tmp_path / "x.yml")


def test_config_tables_replace_a_crashed_writes_copy(tmp_path: Path) -> None:
    """An earlier version wrote each config table into a hidden `.tmp-*` folder and swapped it
    in; a crash there left a complete copy that DuckDB's `**/*.parquet` glob reads beside
    `current` (the inventory twice: every node's cost spread twice). The next write removes
    it, and writes leave no such folder of their own."""
    cfg = parse_config({"inventory": INVENTORY}, tmp_path / "fleetledger.yml")
    home = tmp_path / "home"
    write_config_tables(cfg, home)
    folder = home / "raw" / "config_inventory" / "config"
    (folder / ".tmp-k3j2x9ab").mkdir()
    shutil.copy(folder / "current" / "part-0.parquet", folder / ".tmp-k3j2x9ab" / "part-0.parquet")
    glob = f"{home}/raw/config_inventory/**/*.parquet"
    assert duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchall() == [(6,)]
    write_config_tables(cfg, home)
    assert duckdb.sql(f"select count(*) from read_parquet('{glob}')").fetchall() == [(3,)]
    assert sorted(p.name for p in folder.iterdir()) == ["current"]
    assert sorted(p.name for p in (folder / "current").iterdir()) == ["part-0.parquet"]
