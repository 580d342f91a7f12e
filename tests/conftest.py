"""Shared fixtures: a small generated fleet, and the same fleet after the whole pipeline ran.

The fleet is the generator's 3-day default shape (4 AWS, 2 GCP, 4 on-prem nodes, DCGM every
60 s) starting Friday 2026-10-02, so the idle-notebook weekend, the XID 79 outage, the requeued
run and the straggler all fall inside it. Session-scoped: generated and run once per test run.
Tests that change files copy these folders first.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from fleet_params import FLEET_DAYS, FLEET_SEED, FLEET_START, generate_unlabelled_fleet

from fleetledger.generator import generate

_REPO = Path(__file__).resolve().parents[1]
# tests/spark/ needs dbt-spark, pyspark and Java: `make test-spark` runs it (setting
# FLEETLEDGER_TEST_SPARK), `make test` leaves it out
collect_ignore_glob = [] if os.environ.get("FLEETLEDGER_TEST_SPARK") else ["spark/*"]

# Landing checks: the pipeline runs of the suite validate every landed partition with the
# polars route (the same expectations with Great Expectations' semantics, ingest/core/
# quality_fast.py; tests/test_quality_routes.py proves both routes report the same), which
# saves about 8 CPU-seconds a run. Great Expectations itself validates in the quality modules
# below (GX_MODULES), the product's default for partitions up to 50,000 rows.
GX_MAX_ROWS_ENV = "FLEETLEDGER_QUALITY_GX_MAX_ROWS"
GX_MODULES = {
    "tests/billing/test_quality.py",
    "tests/scheduler/test_sched_quality.py",
    "tests/scheduler/test_run_logs.py",
    "tests/power/test_power_quality.py",
    "tests/test_quality_routes.py",
}
os.environ.setdefault(GX_MAX_ROWS_ENV, "0")
_SUITE_GX_MAX_ROWS = os.environ[GX_MAX_ROWS_ENV]
# dbt's file logs at info, the pipeline's default, in the suite's own dbt invocations too (at
# debug dbt writes every statement it sends as JSON, about a tenth of a small build's time)
os.environ.setdefault("DBT_LOG_LEVEL_FILE", "info")


@pytest.fixture(autouse=True, scope="module")
def _great_expectations_in_quality_modules(request: pytest.FixtureRequest) -> Any:
    """Great Expectations validates (its default row limit) in the quality modules."""
    path = Path(str(request.node.path)).relative_to(_REPO).as_posix()
    if path not in GX_MODULES:
        yield
        return
    os.environ.pop(GX_MAX_ROWS_ENV, None)
    try:
        yield
    finally:
        os.environ[GX_MAX_ROWS_ENV] = _SUITE_GX_MAX_ROWS


# the shared real sample files: FLEETLEDGER_SAMPLES, else shared/ inside or beside the checkout
SAMPLE_DIRS = (
    os.environ.get("FLEETLEDGER_SAMPLES"),
    _REPO / "shared" / "samples",
    _REPO.parent / "shared" / "samples",
)


@pytest.fixture(scope="session")
def samples() -> Path:
    """shared/samples (origins in its SOURCES.md); the test is skipped where there is none."""
    for c in SAMPLE_DIRS:
        if c and Path(c).is_dir():
            return Path(c)
    pytest.skip("shared/samples is not available")


@pytest.fixture(scope="session")
def fleet_window() -> tuple[date, date]:
    return FLEET_START, FLEET_START + timedelta(days=FLEET_DAYS - 1)


@pytest.fixture(scope="session")
def small_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A FLEETLEDGER_HOME holding a generated fleet and its config; nothing run yet."""
    home = tmp_path_factory.mktemp("small_fleet")
    generate(home, days=FLEET_DAYS, seed=FLEET_SEED, start=FLEET_START, scrape_interval_s=60)
    return home


@pytest.fixture(scope="session")
def two_day_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The smallest generated fleet (2 days, a scrape every 5 min) and its config, for tests that
    only need a valid home."""
    home = tmp_path_factory.mktemp("two_day_fleet")
    generate(home, days=2, seed=FLEET_SEED, start=FLEET_START, scrape_interval_s=300)
    return home


@pytest.fixture(scope="session")
def pipeline_home(
    small_fleet: Path, tmp_path_factory: pytest.TempPathFactory, fleet_window: tuple[date, date]
) -> Path:
    """The small fleet after `run_pipeline` over all its days: published warehouse.duckdb."""
    from fleetledger.pipeline import run_pipeline

    home = tmp_path_factory.mktemp("pipeline_home")
    shutil.copytree(small_fleet, home, dirs_exist_ok=True)
    run_pipeline(home, *fleet_window)
    assert (home / "warehouse.duckdb").exists()
    return home


@pytest.fixture(scope="session")
def ground_truth(small_fleet: Path) -> dict:
    return json.loads((small_fleet / "ground_truth.json").read_text())


# A second, different fleet: another seed, fewer nodes (2 AWS, 1 GKE + a MIG/time-sliced GKE
# node, 2 on-prem + an on-prem MIG node holding a Slurm MIG GRES job), 2 days, and the waste
# cases of the recommendations (generator waste_runs.py: a job that fits a MIG instance, two
# vLLM servers that fit on one GPU).
MIG_FLEET = {
    "days": 2,
    "seed": 2,
    "aws_nodes": 2,
    "gcp_nodes": 1,
    "onprem_nodes": 2,
    "mig": True,
    "mig_gres": True,
    "waste_cases": True,
}


def _run_fleet(home: Path, start: date, days: int) -> Path:
    from fleetledger.pipeline import run_pipeline

    run_pipeline(home, start, start + timedelta(days=days - 1))
    assert (home / "warehouse.duckdb").exists()
    return home


@pytest.fixture(scope="session")
def mig_pipeline_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The second fleet (MIG-sliced and time-sliced GPUs) after the whole pipeline."""
    home = tmp_path_factory.mktemp("mig_fleet")
    generate(home, start=FLEET_START, scrape_interval_s=60, **MIG_FLEET)
    return _run_fleet(home, FLEET_START, MIG_FLEET["days"])


@pytest.fixture(scope="module", params=["small_fleet", "mig_fleet"])
def fleet_home(request: pytest.FixtureRequest) -> Path:
    """Each of the two fleets after the pipeline: a test using it runs once per fleet."""
    name = "pipeline_home" if request.param == "small_fleet" else "mig_pipeline_home"
    return request.getfixturevalue(name)


@pytest.fixture(scope="session")
def unlabelled_pipeline_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The small fleet again, but the AWS site's DCGM exporter adds no `hpc_job` labels."""
    home = tmp_path_factory.mktemp("unlabelled_fleet")
    generate_unlabelled_fleet(home)
    return _run_fleet(home, FLEET_START, FLEET_DAYS)


# Tests in tiers: a test that needs a built warehouse (a pipeline run over a generated fleet, or
# a dbt build of hand-made landings) is marked `warehouse`; `pytest -m "not warehouse"` runs the
# fast tier (readers, config, orchestration definitions, generator shapes).
WAREHOUSE_FIXTURES = {
    "pipeline_home",
    "mig_pipeline_home",
    "fleet_home",
    "unlabelled_pipeline_home",
}


#: the test scopes (files, or the shared fleets) that take longest, started first under xdist
LONGEST_FIRST = (
    "shared-fleets",
    "tests/test_incremental.py",
    "tests/billing/test_pipeline_faults.py",
    "tests/telemetry/test_dcgm_pipeline_shapes.py",
    "tests/test_run_guard.py",
    "tests/telemetry/test_dcgm_bad_files_pipeline.py",
    "tests/test_orchestration.py",
    "tests/test_edges.py",
)

#: the session fixtures that run the whole pipeline over a generated fleet (minutes each)
SHARED_FLEETS = ("pipeline_home", "mig_pipeline_home", "fleet_home", "unlabelled_pipeline_home")
_USES_FLEET = re.compile(r"\b(?:" + "|".join(SHARED_FLEETS) + r")\b")


def fleet_test_files(root: Path) -> set[str]:
    """The test files (relative to `root`, as pytest names them) that use a shared fleet."""
    tests = root / "tests"
    return {
        p.relative_to(root).as_posix()
        for p in tests.rglob("test_*.py")
        if _USES_FLEET.search(p.read_text(encoding="utf-8"))
    }


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Under pytest-xdist (`make test`: `-n auto`) a test file runs on one worker (its module
    fixtures are built once), and every file that uses a shared fleet runs on the same worker,
    so each fleet's pipeline runs once, not once per worker."""
    from xdist.scheduler import LoadFileScheduling

    fleet_files = fleet_test_files(Path(str(config.rootpath)))

    class FleetScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return "shared-fleets" if path in fleet_files else path

    # the scopes go out in collection order, which pytest_collection_modifyitems sorts longest
    # first (xdist would hand out the files with the most tests first: a 10-run file with 3
    # tests then starts last and runs alone)
    config.option.loadscopereorder = False
    return FleetScheduling(config, log)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    fleet_files = fleet_test_files(Path(str(config.rootpath)))
    first = {scope: n for n, scope in enumerate(LONGEST_FIRST)}

    def rank(item: pytest.Item) -> int:
        path = item.nodeid.split("::", 1)[0]
        return first.get("shared-fleets" if path in fleet_files else path, len(first))

    items.sort(key=rank)  # stable: each file keeps its order
    for item in items:
        module = getattr(item, "module", None)
        builds = module is not None and any(
            hasattr(module, name)
            for name in ("dbt_build", "dbt_build_models_of_day", "dbt_run", "run_pipeline")
        )
        if builds or WAREHOUSE_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.warehouse)


@pytest.fixture(params=["hashes", "every-row-one-hash"])
def row_hashes(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Polars' row hashes as they are, then every row forced onto one hash: code that groups
    rows by `DataFrame.hash_rows` (the duplicate filter, a long export's label sets) must give
    the same result either way, a hash only saying where to look."""
    if request.param == "every-row-one-hash":
        monkeypatch.setattr(
            pl.DataFrame,
            "hash_rows",
            lambda self, *a, **k: pl.Series([7] * self.height, dtype=pl.UInt64),
        )
    return str(request.param)
