"""`dbt build` of a selection of the project against a FLEETLEDGER_HOME, in this process (dbt's
programmatic runner), for tests that need a few models without the whole pipeline."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path
from typing import Any

from fleetledger.config_warehouse import WarehouseSettings
from orchestration.dbt_parse import (
    PARTIAL_PARSE,
    config_dbt_vars,
    dbt_working_dir,
    seed_parse_cache,
    shared_profile_env,
)

REPO = Path(__file__).resolve().parents[1]


def _close_dbt_duckdb() -> None:
    """dbt-duckdb keeps its database open in the process after a programmatic run; close it so
    the test can open the warehouse read-only."""
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    with DuckDBConnectionManager._LOCK:
        env = DuckDBConnectionManager._ENV
        DuckDBConnectionManager._ENV = None
    if env is not None:
        env.close()


def dbt_build(
    home: Path,
    select: str,
    *,
    exclude: str | None = None,
    dbt_vars: dict[str, Any] | None = None,
    run_id: str | None = None,
    env: dict[str, str] | None = None,
    full_refresh: bool = False,
) -> None:
    """Build (and test) `select` into `home`/build/warehouse.duckdb; assert it succeeded, naming
    the nodes that did not. `run_id` stamps the build's data-health findings, as the pipeline's
    FLEETLEDGER_RUN_ID does; `env` sets more of the pipeline's variables (the recomputed days:
    FLEETLEDGER_RECOMPUTE_START / _END)."""
    result = dbt_invoke(
        home,
        select,
        exclude=exclude,
        dbt_vars=dbt_vars,
        run_id=run_id,
        env=env,
        full_refresh=full_refresh,
    )
    failed = [
        f"{r.node.name}: {r.message}"
        for r in (result.result or [])
        if getattr(r, "status", None) not in ("success", "pass")
    ]
    assert result.success, f"dbt build failed: {result.exception or failed}"


def dbt_build_models_of_day(home: Path, select: str, *, run_id: str, day: date | None) -> None:
    """Build (and test) `select` as `fleetledger run --date day` builds it (the days its day
    models recompute: `day` alone), or in full (`day` None). The relationship and singular
    tests of the selected models are left out: they read models the selection leaves out."""
    env = {"FLEETLEDGER_RECOMPUTE_START": str(day), "FLEETLEDGER_RECOMPUTE_END": str(day)}
    dbt_build(
        home,
        select,
        exclude="test_name:relationships test_type:singular",
        run_id=run_id,
        env=env if day else None,
    )


def full_build_rows(
    home: Path, tmp: Path, select: str, queries: tuple[str, ...]
) -> dict[str, list[tuple]]:
    """What `queries` read from a full build of `select` over a copy of `home`'s landing zone
    (in `tmp`/full): what the hand-made tests compare an incremental build with."""
    from edge_rows import built_rows

    full = tmp / "full"
    shutil.copytree(home / "raw", full / "raw")
    dbt_build_models_of_day(full, select, run_id="full", day=None)
    return {q: built_rows(full, q) for q in queries}


def dbt_invoke(
    home: Path,
    select: str,
    *,
    exclude: str | None = None,
    dbt_vars: dict[str, Any] | None = None,
    run_id: str | None = None,
    env: dict[str, str] | None = None,
    full_refresh: bool = False,
) -> Any:
    """`dbt build --select select` into `home`/build/warehouse.duckdb: dbt's result (its
    `result` lists each node's status, message and failures), whether it succeeded or not."""
    from dbt.cli.main import dbtRunner

    # the unit tests run once, in tests/test_dbt_unit_tests.py
    args = ["build", "--select", select, "--exclude-resource-type", "unit_test"]
    if exclude:
        args += ["--exclude", exclude]
    if full_refresh:
        args.append("--full-refresh")
    variables = dict(env or {})
    if run_id is not None:
        variables["FLEETLEDGER_RUN_ID"] = run_id
    with as_the_pipeline_runs_dbt(home, dbt_vars, variables) as common:
        return dbtRunner().invoke([*args, *common, "--quiet"])


@contextmanager
def as_the_pipeline_runs_dbt(
    home: Path, dbt_vars: dict[str, Any] | None = None, env: dict[str, str] | None = None
) -> Iterator[list[str]]:
    """While active, dbt run in this process over `home` runs as the pipeline runs it: in the
    home's build/, with the profile's environment and `env` set (restored after); yields the
    arguments to add (the project, profile, target, vars, and a target path, `dbt_target`,
    seeded with the project's parse cache, `shared_parse`). dbt-duckdb's database is closed
    after, so the test can open the warehouse."""
    target, variables = shared_parse(home, home / "dbt_target", dbt_vars)
    variables.update(env or {})
    args = pipeline_dbt_args(home, target, dbt_vars)
    old = {k: os.environ.get(k) for k in variables}
    os.environ.update(variables)
    cwd = os.getcwd()
    dbt_working_dir(home).mkdir(parents=True, exist_ok=True)
    os.chdir(dbt_working_dir(home))
    try:
        yield args
    finally:
        os.chdir(cwd)
        _close_dbt_duckdb()
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def pipeline_dbt_args(
    home: Path, target: Path, dbt_vars: dict[str, Any] | None = None
) -> list[str]:
    """dbt's arguments for a run over `home` as the pipeline gives them: the project and
    profile, `target` as the target path, the default target, and the vars (the defaults
    unless `dbt_vars`)."""
    return [
        "--project-dir",
        str(REPO / "dbt_project"),
        "--profiles-dir",
        str(REPO / "dbt_project"),
        "--target-path",
        str(target),
        "--log-path",
        str(home / "dbt_logs"),
        "--target",
        WarehouseSettings().dbt_target,
        "--vars",
        json.dumps(dbt_vars or config_dbt_vars(None)),
    ]


def shared_parse(
    home: Path, target: Path, dbt_vars: dict[str, Any] | None = None
) -> tuple[Path, dict[str, str]]:
    """`target` for a dbt run over `home` as the pipeline runs it, and the environment to run
    it with: the profile the same for every home, and, when `target` has no parse cache yet and
    the vars are the defaults, the project's own (orchestration/dbt_parse.py), so that dbt does
    not parse the whole project again for each test's home. Run dbt in `dbt_working_dir(home)`."""
    from orchestration.dbt import parse_if_changed

    target.mkdir(parents=True, exist_ok=True)
    parse_if_changed(REPO / "dbt_project")
    if dbt_vars in (None, config_dbt_vars(None)):
        seed_parse_cache(target / PARTIAL_PARSE, REPO / "dbt_project")
    return target, {"FLEETLEDGER_HOME": str(home), **shared_profile_env(WarehouseSettings())}
