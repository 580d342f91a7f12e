"""A home's first build parses the dbt project at the run's start (orchestration/dbt_parse.py)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from fleetledger.config import Config
from orchestration.dbt import FleetDbtCliResource, dbt_executable, dbt_project_dir
from orchestration.dbt_parse import (
    adopt_prepared_parse,
    discard_prepared_parse,
    home_parse_cache,
    prepare_home_parse,
    prepared_parse_dir,
)

FULL_PARSE = "Unable to do partial parsing"


def _dbt_log_messages(home: Path) -> list[str]:
    (run,) = [p for p in (home / "build" / "dbt").iterdir() if p.is_dir()]
    return [json.loads(line)["info"]["msg"] for line in (run / "dbt.log").read_text().splitlines()]


def test_the_first_build_of_a_home_uses_the_parse_made_beside_the_ingest(
    pipeline_home: Path,
) -> None:
    # `pipeline_home` is a new home's one run: without the parse at the run's start its build
    # parsed every file ("Unable to do partial parsing because profile has changed")
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
