"""`warehouse:` (DuckDB memory limit and threads): validated when the config loads, carried to
the dbt build's profile and to the DuckDB connections ingest opens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import yaml

from fleetledger.config import ConfigError, parse_config
from fleetledger.config_warehouse import WarehouseSettings, warehouse_env
from ingest.core import duckdb_settings

REPO = Path(__file__).resolve().parents[1]


def _load(tmp_path: Path, warehouse: object) -> object:
    return parse_config({"warehouse": warehouse}, tmp_path / "fleetledger.yml")


def test_settings_are_read_and_normalised(tmp_path: Path) -> None:
    cfg = _load(tmp_path, {"memory_limit": "4 gib", "threads": 3})
    assert cfg.warehouse.memory_limit == "4GiB"
    assert cfg.warehouse.env() == {
        "FLEETLEDGER_DUCKDB_MEMORY_LIMIT": "4GiB",
        "FLEETLEDGER_DUCKDB_THREADS": "3",
    }
    assert _load(tmp_path, {"memory_limit": "50%"}).warehouse.memory_limit == "50%"
    # defaults: DuckDB's own (80 % of the memory, a thread per CPU)
    default = parse_config({}, tmp_path / "fleetledger.yml").warehouse
    assert default.memory_limit == "80%"
    assert default.env()["FLEETLEDGER_DUCKDB_THREADS"] == str(os.cpu_count())
    # a full build's day batches: 16 M landed DCGM rows (a day of 1,024 GPUs at 30 s is 14.7 M)
    assert default.day_batch_rows == 16_000_000
    assert _load(tmp_path, {"day_batch_rows": 2_000_000}).warehouse.day_batch_rows == 2_000_000


@pytest.mark.parametrize(
    ("warehouse", "message"),
    [
        ({"memory_limit": "4 gigs"}, r"warehouse\.memory_limit: '4 gigs' is not a memory size"),
        ({"memory_limit": "0GB"}, r"warehouse\.memory_limit: '0GB' is not a memory size"),
        ({"memory_limit": "120%"}, r"warehouse\.memory_limit: '120%' is not a memory size"),
        ({"threads": 0}, r"warehouse\.threads: Input should be greater than or equal to 1"),
        (
            {"day_batch_rows": 0},
            r"warehouse\.day_batch_rows: Input should be greater than or equal to 1",
        ),
        (
            {"day_batch_rows": "many"},
            r"warehouse\.day_batch_rows: Input should be a valid integer",
        ),
        ({"memory": "4GB"}, r"warehouse\.memory: Extra inputs are not permitted"),
    ],
)
def test_bad_settings_name_the_key(tmp_path: Path, warehouse: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        _load(tmp_path, warehouse)


def test_dbt_profile_applies_the_settings() -> None:
    """profiles.yml rendered as dbt renders it, with the build step's environment, the
    database opened and a cursor made the way dbt-duckdb does (`config_options` once when the
    file opens, `settings` on each cursor): DuckDB reports every setting back."""
    from dbt.adapters.duckdb.credentials import DuckDBCredentials
    from dbt.adapters.duckdb.environments import Environment
    from dbt.config.renderer import ProfileRenderer
    from dbt_common.context import set_invocation_context

    raw = yaml.safe_load((REPO / "dbt_project" / "profiles.yml").read_text())
    output = raw["fleetledger"]["outputs"]["duckdb"]
    with warehouse_env(WarehouseSettings(memory_limit="2GiB", threads=1)):
        set_invocation_context(os.environ)
        rendered = ProfileRenderer({}).render_data(output)
    creds = DuckDBCredentials(
        path=":memory:", config_options=rendered["config_options"], settings=rendered["settings"]
    )
    database = Environment.initialize_db(creds)
    cursor = Environment.initialize_cursor(creds, database.cursor())
    got = cursor.execute(
        "select current_setting('memory_limit'), current_setting('threads'), "
        "current_setting('preserve_insertion_order'), current_setting('TimeZone'), "
        "current_setting('parquet_metadata_cache')"
    ).fetchone()
    assert got == ("2.0 GiB", 1, False, "UTC", True)


def test_the_dbt_build_step_sets_the_settings(tmp_path: Path) -> None:
    from orchestration.dbt import _warehouse_settings
    from orchestration.resources import FleetResource

    (tmp_path / "fleetledger.yml").write_text("warehouse: {memory_limit: 3GB, threads: 1}\n")
    env = _warehouse_settings(FleetResource(home=str(tmp_path))).env()
    assert env == {"FLEETLEDGER_DUCKDB_MEMORY_LIMIT": "3GB", "FLEETLEDGER_DUCKDB_THREADS": "1"}


def test_ingest_connections_take_the_settings() -> None:
    before = {k: os.environ.get(k) for k in duckdb_settings.SETTINGS_ENV}
    with warehouse_env(WarehouseSettings(memory_limit="512MiB", threads=1)):
        con = duckdb_settings.connect()
    got = con.execute(
        "select current_setting('memory_limit'), current_setting('threads')"
    ).fetchone()
    assert got == ("512.0 MiB", 1)
    # the run's settings do not outlive it
    assert {k: os.environ.get(k) for k in duckdb_settings.SETTINGS_ENV} == before
