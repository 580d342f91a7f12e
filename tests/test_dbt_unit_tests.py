"""dbt's unit tests (the `unit_tests:` of every `_*__models.yml`: given rows, expected rows), run
here rather than in each daily build (the pipeline excludes them, as dbt advises for production).

They need every model's relation to exist (dbt reads the input models' columns), so the module
builds the whole project with `--empty` (every model, zero rows) on a home with the landing
schema files and a config's tables, then runs the unit tests. No pipeline, no fleet data."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from pathlib import Path

import pytest

from fleetledger.config import load_config
from fleetledger.config_tables import write_config_tables
from ingest.core.landing import write_schema_files

REPO = Path(__file__).resolve().parents[1]
PROJECT = REPO / "dbt_project"


def _unit_tests_in_the_project(target: Path) -> set[str]:
    manifest = json.loads((target / "manifest.json").read_text())
    return set(manifest.get("unit_tests", {}))


@pytest.fixture(scope="module")
def unit_results(small_fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> dict:
    from dbt.cli.main import dbtRunner
    from dbt_in_process import as_the_pipeline_runs_dbt

    home = tmp_path_factory.mktemp("dbt_unit")
    shutil.copy(small_fleet / "fleetledger.yml", home / "fleetledger.yml")
    write_schema_files(home)
    write_config_tables(load_config(home / "fleetledger.yml"), home)
    target = home / "dbt_target"
    with as_the_pipeline_runs_dbt(home) as common:
        runner = dbtRunner()
        empty = runner.invoke(["run", "--empty", *common, "--quiet"])
        assert empty.success, f"the empty build failed: {empty.exception}"
        unit = runner.invoke(["test", "--resource-type", "unit_test", *common, "--quiet"])
    return {
        "success": unit.success,
        # the project's on-run-start hook runs too; only the unit tests' results count
        "results": [
            (r.node.unique_id, str(r.status), r.message)
            for r in unit.result or []
            if r.node.unique_id.startswith("unit_test.")
        ],
        "declared": _unit_tests_in_the_project(target),
    }


def test_every_unit_test_of_the_project_runs_and_passes(unit_results: dict) -> None:
    ran = {uid for uid, _status, _msg in unit_results["results"]}
    # every unit test the yml files declare ran (none skipped by a selector), and there are some
    assert len(unit_results["declared"]) >= 20
    assert ran == unit_results["declared"]
    failed = [f"{uid}: {msg}" for uid, status, msg in unit_results["results"] if status != "pass"]
    assert not failed, "\n".join(failed)
    assert unit_results["success"]
    statuses = Counter(status for _uid, status, _msg in unit_results["results"])
    assert statuses == {"pass": len(ran)}


def test_every_unit_test_of_a_day_model_says_whether_it_is_incremental() -> None:
    """A day model's SQL asks `is_incremental()` (macros/incremental.sql, `recompute_range`),
    which a unit test cannot answer from a relation: every unit test of a day model, or of a
    model stored by day or billing period in the build warehouse (incremental_published_by_day),
    overrides it (`overrides: {macros: {is_incremental: ...}}`), or it fails to compile on a
    fresh warehouse. A static read of the yml files, no dbt."""
    import yaml

    sql = (PROJECT / "models").rglob("*.sql")
    day_models = {
        p.stem
        for p in sql
        if "incremental_by_day(" in p.read_text()
        or "incremental_published_by_day(" in p.read_text()
    }
    checked, missing = 0, []
    for yml in (PROJECT / "models").rglob("*.yml"):
        for test in (yaml.safe_load(yml.read_text()) or {}).get("unit_tests") or []:
            if test["model"] not in day_models:
                continue
            checked += 1
            macros = (test.get("overrides") or {}).get("macros") or {}
            if "is_incremental" not in macros:
                missing.append(f"{yml.name}: {test['name']} ({test['model']})")
    assert checked >= 10
    assert missing == []
