"""A home's first build starts from the project's parse, or parses at the run's start
(orchestration/dbt_parse.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import duckdb
import pytest
from dbt_in_process import dbt_invoke

from fleetledger.config import Config, HealthSettings
from fleetledger.config_economics import EconomicsSettings
from fleetledger.config_warehouse import WarehouseSettings
from ingest.core.landing import write_schema_files
from orchestration.dbt import FleetDbtCliResource, dbt_executable, dbt_project_dir
from orchestration.dbt_parse import (
    PARTIAL_PARSE,
    adopt_prepared_parse,
    discard_prepared_parse,
    home_parse_cache,
    prepare_home_parse,
    prepared_parse_dir,
    shares_project_parse,
)

pytestmark = pytest.mark.warehouse

FULL_PARSE = "Unable to do partial parsing"


def _dbt_log_messages(home: Path) -> list[str]:
    (run,) = [p for p in (home / "build" / "dbt").iterdir() if p.is_dir()]
    return [json.loads(line)["info"]["msg"] for line in (run / "dbt.log").read_text().splitlines()]


def test_the_first_build_of_a_home_uses_the_parse_made_beside_the_ingest(
    pipeline_home: Path,
) -> None:
    # `pipeline_home` is a new home's one run: it starts from the project's parse (without it,
    # or the parse at the run's start, its build parsed every file: "Unable to do partial
    # parsing because profile has changed")
    messages = _dbt_log_messages(pipeline_home)
    assert not [m for m in messages if FULL_PARSE in m], [m for m in messages if "pars" in m]
    assert any(m.startswith("Found ") and " models" in m for m in messages)
    assert home_parse_cache(pipeline_home).is_file()
    assert not prepared_parse_dir(pipeline_home).exists()


def test_a_failed_parse_leaves_the_build_to_parse_itself(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(
        dbt_project_dir(), project, ignore=shutil.ignore_patterns("target", "logs", "*.msgpack")
    )
    # a model's config that names no model: `dbt parse` fails
    (project / "models" / "broken.yml").write_text("models:\n  - name: [not, a, name\n")
    home = tmp_path / "home"
    home.mkdir()
    dbt = FleetDbtCliResource(project_dir=str(project), dbt_executable=dbt_executable())
    assert prepare_home_parse(home, Config(), dbt, {"FLEETLEDGER_HOME": str(home)})
    assert prepared_parse_dir(home).is_dir()
    assert not adopt_prepared_parse(home)
    assert not home_parse_cache(home).exists()
    assert not prepared_parse_dir(home).exists()
    # nothing left to adopt or discard
    assert not adopt_prepared_parse(home)
    discard_prepared_parse(home)


def test_a_home_with_its_own_cache_starts_no_parse(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home_parse_cache(home).parent.mkdir(parents=True)
    home_parse_cache(home).write_bytes(b"an earlier build's cache")
    dbt = FleetDbtCliResource(project_dir=str(dbt_project_dir()), dbt_executable=dbt_executable())
    assert not prepare_home_parse(home, Config(), dbt, {"FLEETLEDGER_HOME": str(home)})
    assert not prepared_parse_dir(home).exists()
    assert home_parse_cache(home).read_bytes() == b"an earlier build's cache"


def test_a_home_keeping_the_defaults_starts_from_the_projects_parse(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "target").mkdir(parents=True)
    (project / "dbt_project.yml").write_text("name: fleetledger\n")
    (project / "target" / PARTIAL_PARSE).write_bytes(b"the project's parse")
    home = tmp_path / "home"
    home.mkdir()
    dbt = FleetDbtCliResource(project_dir=str(project), dbt_executable=dbt_executable())
    # no parse started: the home's cache is a copy of the project's
    assert not prepare_home_parse(home, Config(), dbt, {"FLEETLEDGER_HOME": str(home)})
    assert home_parse_cache(home).read_bytes() == b"the project's parse"
    assert not prepared_parse_dir(home).exists()


@pytest.mark.parametrize(
    ("config", "shares"),
    [
        (Config(), True),
        (None, True),
        (Config(health=HealthSettings(straggler_margin=0.3)), False),
        (Config(economics=EconomicsSettings(inference_ttft_slo_seconds=2.0)), False),
        (Config(warehouse=WarehouseSettings(memory_limit="3GB")), False),
        (Config(warehouse=WarehouseSettings(threads=64)), False),
        (Config(warehouse=WarehouseSettings(engine="spark")), False),
        (Config(warehouse=WarehouseSettings(target="duckdb_other")), False),
    ],
)
def test_only_the_default_settings_share_the_projects_parse(
    config: Config | None, shares: bool
) -> None:
    # what dbt compares before it uses a cache: the vars (health, economics), the target and
    # the profile (the DuckDB settings)
    assert shares_project_parse(config) is shares


def test_each_home_reads_its_own_landing_zone_from_one_parse(tmp_path: Path) -> None:
    """Two homes built from the project's parse, neither parsing the project again: each
    staging view reads the landing zone of its own home, named in full (a view stays readable
    from any folder)."""
    for name in ("first", "second"):
        home = tmp_path / name
        write_schema_files(home)
        # at debug, dbt's file log says what it parsed again
        debug = {"DBT_LOG_LEVEL_FILE": "debug"}
        result = dbt_invoke(home, "stg_slurm__jobs", run_id=name, env=debug)
        assert result.success, result.exception
        log = (home / "dbt_logs" / "dbt.log").read_text()
        assert FULL_PARSE not in log
        # no file parsed again: none read the home (a file that read an environment variable
        # whose value differs from the parse's is parsed again, and every model after it)
        assert "0 files deleted, 0 files added, 0 files changed" in log
        with duckdb.connect(str(home / "build" / "warehouse.duckdb"), read_only=True) as con:
            (sql,) = con.execute(
                "select sql from duckdb_views() where view_name = 'stg_slurm__jobs'"
            ).fetchone()
        assert f"read_parquet('{home}/raw/slurm_jobs/**/*.parquet'" in sql, sql
        assert "$LANDING" not in sql
