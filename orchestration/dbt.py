"""The dbt project as Dagster assets; dbt tests become asset checks.

The staging models read `landing.<table>` dbt sources; the translator replaces each such source
with the ingest assets (`raw/<source name>`) whose kind lands that table, and the `config_*`
tables with the config asset, so the graph runs source → staging → marts → publish.

dbt runs as a child process (dagster-dbt's `DbtCliResource.cli`); it is started so that it dies
with the run (`children_die_with_parent`: PR_SET_PDEATHSIG on Linux) and SIGTERM stops it
(`stop_children_on_sigterm`), and the build holds the home's run lock (fleetledger/run_lock.py),
so a run that `dagster dev` launches never builds beside a `fleetledger run`.
"""

import importlib.metadata
import json
import os
import shutil
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, date, datetime
from functools import cache, cached_property
from pathlib import Path
from typing import Any

import dagster_dbt.core.dbt_cli_invocation as dbt_cli_invocation
from dagster import AssetDep, AssetExecutionContext, AssetKey, AssetsDefinition, AssetSpec
from dagster._utils import run_with_concurrent_update_guard
from dagster_dbt import (
    DagsterDbtTranslator,
    DbtCliInvocation,
    DbtCliResource,
    DbtProject,
    dbt_assets,
)
from packaging import version

from fleetledger.child_processes import children_die_with_parent, stop_children_on_sigterm
from fleetledger.config import Config, config_path, load_config
from fleetledger.config_warehouse import WarehouseSettings
from fleetledger.env_vars import environment
from fleetledger.incremental import (
    build_inputs,
    day_batches,
    full_refresh_reason,
    guarded_build,
    recompute_span,
    record_day_batches,
    set_aside_damaged_history,
)
from fleetledger.publish import export_spark_warehouse
from fleetledger.run_lock import home_lock
from ingest.core.findings import IngestFinding
from ingest.core.findings_landing import LANDING_FINDINGS_SOURCE, add_ingest_findings
from ingest.core.landing import recover_crashed_writes, write_schema_files
from orchestration.config_assets import CONFIG_TABLES_KEY
from orchestration.dbt_parse import (
    PARTIAL_PARSE,
    adopt_prepared_parse,
    config_dbt_vars,
    dbt_working_dir,
    seed_home_parse,
    shared_profile_env,
)
from orchestration.ingest_assets import kinds_landing, raw_asset_key
from orchestration.partitions import SINGLE_RUN, partitions_for
from orchestration.resources import FleetResource

REPO_ROOT = Path(__file__).resolve().parents[1]
DBT_PROJECT_DIR = REPO_ROOT / "dbt_project"
LANDING_SOURCE = "landing"
# files under the dbt project that are outputs, not inputs, of a parse
_NOT_INPUTS = {"target", "logs", "dbt_packages", ".user.yml"}


# dbt's unit tests check model logic on fixed rows, not the data: the suite runs them
# (tests/test_dbt_unit_tests.py), a daily build does not (dbt's own advice for production)
PIPELINE_BUILD_ARGS = ("--exclude-resource-type", "unit_test")
# dbt's own variable for the level of its file log; the pipeline's default (set
# DBT_LOG_LEVEL_FILE=debug before a run for every statement dbt sent)
DBT_LOG_LEVEL_FILE = "DBT_LOG_LEVEL_FILE"
DEFAULT_DBT_FILE_LOG_LEVEL = "info"
# a run tag: rebuild every model (`fleetledger run --full-refresh`; the value says why)
FULL_REFRESH_TAG = "fleetledger/full_refresh"
# the per-run dbt artifacts (manifest, run_results, dbt.log) kept under $FLEETLEDGER_HOME/build/dbt
KEEP_BUILD_TARGETS = 3


def run_target_dir(home: Path, run_id: str) -> Path:
    """Where a run's dbt artifacts go: `$FLEETLEDGER_HOME/build/dbt/<run id>`."""
    return home / "build" / "dbt" / run_id


def build_target_path(home: Path, run_id: str) -> Path:
    """This run's dbt target folder, `$FLEETLEDGER_HOME/build/dbt/<run id>`, seeded with the
    home's last `partial_parse.msgpack` (dbt then re-parses only the files that changed; a new
    home's is a copy of the project's own, or the parse made at the run's start:
    orchestration/dbt_parse.py). Older run folders beyond the last few are removed, so the
    artifacts do not pile up."""
    target = run_target_dir(home, run_id)
    root = target.parent
    target.mkdir(parents=True, exist_ok=True)
    cached = root / PARTIAL_PARSE
    if cached.is_file():
        shutil.copy(cached, target / PARTIAL_PARSE)
    runs = sorted((p for p in root.iterdir() if p.is_dir()), key=lambda p: p.stat().st_mtime)
    for old in runs[:-KEEP_BUILD_TARGETS]:
        if old != target:
            shutil.rmtree(old, ignore_errors=True)
    return target


def keep_partial_parse(target: Path) -> None:
    """Keep the build's parse cache for the home's next build (replaced atomically)."""
    made = target / PARTIAL_PARSE
    if made.is_file():
        tmp = target.parent / f".{PARTIAL_PARSE}.tmp"
        shutil.copy(made, tmp)
        tmp.replace(target.parent / PARTIAL_PARSE)


@contextmanager
def fleetledger_home_env(home: Path) -> Iterator[None]:
    """Set FLEETLEDGER_HOME for the duration (dbt's profile reads it), then restore it."""
    old = os.environ.get("FLEETLEDGER_HOME")
    os.environ["FLEETLEDGER_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FLEETLEDGER_HOME", None)
        else:
            os.environ["FLEETLEDGER_HOME"] = old


def _newest_input_mtime(project_dir: Path) -> float:
    newest = 0.0
    for root, dirs, files in os.walk(project_dir):
        if Path(root) == project_dir:
            dirs[:] = [d for d in dirs if d not in _NOT_INPUTS]
        for name in files:
            if name in _NOT_INPUTS or name.endswith(".concurrent-update-lock"):
                continue
            try:
                newest = max(newest, os.stat(os.path.join(root, name)).st_mtime)
            except FileNotFoundError:
                continue
    return newest


def manifest_is_stale(project: DbtProject) -> bool:
    path = project.manifest_path
    return not path.exists() or path.stat().st_mtime < _newest_input_mtime(project.project_dir)


def dbt_project_dir() -> Path:
    """`dbt_project/` of the repo; FLEETLEDGER_DBT_PROJECT_DIR points elsewhere (tests, dev)."""
    override = os.environ.get("FLEETLEDGER_DBT_PROJECT_DIR")
    return Path(override).resolve() if override else DBT_PROJECT_DIR


def dbt_project(project_dir: Path | None = None) -> DbtProject | None:
    """The dbt project with a parsed manifest, or None while the project does not exist.

    `dbt parse` runs when `target/manifest.json` is missing or older than any file of the
    project (`parse_if_changed`), so the asset graph always matches the models on disk."""
    project_dir = project_dir or dbt_project_dir()
    if not (project_dir / "dbt_project.yml").exists():
        return None
    parse_if_changed(project_dir)
    return _dbt_project(project_dir)


def parse_if_changed(project_dir: Path | None = None) -> bool:
    """Parse the project when its manifest is missing or older than a file of it; whether it
    did (the scale benchmark parses before its timed run). False without a project."""
    project_dir = project_dir or dbt_project_dir()
    if not (project_dir / "dbt_project.yml").exists():
        return False
    project = _dbt_project(project_dir)
    if not manifest_is_stale(project):
        return False
    home = Path(os.environ.get("FLEETLEDGER_HOME", "./data")).resolve()
    with fleetledger_home_env(home):
        _prepare(project)
    return True


def dbt_executable() -> str:
    """dbt from this interpreter's environment (the venv need not be activated), else PATH."""
    candidate = Path(sys.executable).parent / "dbt"
    return str(candidate) if candidate.exists() else "dbt"


def _prepare(project: DbtProject) -> None:
    """`dbt deps` (when the project has packages) and `dbt parse`, guarded against concurrent
    processes doing the same."""
    # the vars, target and profile environment of a build with the default settings, so that
    # this parse's cache serves every home that keeps them (orchestration/dbt_parse.py)
    defaults = WarehouseSettings()
    cli = FleetDbtCliResource(
        project_dir=project, dbt_executable=dbt_executable(), target=defaults.dbt_target
    )

    def deps() -> None:
        with children_die_with_parent(dbt_cli_invocation):
            invocation = cli.cli(["deps", "--quiet"], target_path=project.target_path)
        invocation.wait()

    def parse() -> None:
        args = ["parse", "--vars", json.dumps(config_dbt_vars(None)), "--quiet"]
        env = shared_profile_env(defaults)
        with environment(env), children_die_with_parent(dbt_cli_invocation):
            invocation = cli.cli(args, target_path=project.target_path)
        invocation.wait()

    has_packages = any(
        (project.project_dir / name).exists() for name in ("packages.yml", "dependencies.yml")
    )
    if has_packages:
        run_with_concurrent_update_guard(project.project_dir / "package-lock.yml", deps)
    project.manifest_path.parent.mkdir(parents=True, exist_ok=True)
    run_with_concurrent_update_guard(project.manifest_path, parse)


@cache
def _dbt_project(project_dir: Path) -> DbtProject:
    return DbtProject(project_dir=project_dir, profiles_dir=project_dir)


class FleetDbtTranslator(DagsterDbtTranslator):
    """Groups by dbt layer (the models' top folder: staging, intermediate, utilities, marts);
    a model's asset key is its name, whichever schema the layer is published in (dagster-dbt
    would prefix a configured schema: `staging/stg_...`). `landing.<table>` sources become deps
    on the assets that land them: `raw/<source name>` for every configured source of the
    table's kind, the config asset for the `config_*` tables. A landing table nothing fills is
    dropped from the graph (ingest writes an empty schema file for it)."""

    def __init__(
        self, upstream_by_table: Mapping[str, Sequence[AssetKey]], config_key: AssetKey | None
    ) -> None:
        super().__init__()
        self._upstream_by_table = {t: list(keys) for t, keys in upstream_by_table.items()}
        self._config_key = config_key

    def upstream_of(self, table: str) -> list[AssetKey]:
        if table in self._upstream_by_table:
            return self._upstream_by_table[table]
        if table.startswith("config_") and self._config_key is not None:
            return [self._config_key]
        return []

    def get_asset_key(self, dbt_resource_props: Mapping[str, Any]) -> AssetKey:
        key = super().get_asset_key(dbt_resource_props)
        schema = (dbt_resource_props.get("config") or {}).get("schema")
        is_node = dbt_resource_props.get("resource_type") in ("model", "seed", "snapshot")
        if is_node and schema and list(key.path) == [schema, dbt_resource_props.get("name")]:
            return AssetKey(key.path[1:])
        return key

    def get_group_name(self, dbt_resource_props: Mapping[str, Any]) -> str | None:
        fqn = dbt_resource_props.get("fqn") or []
        is_node = dbt_resource_props.get("resource_type") in ("model", "seed", "snapshot")
        if is_node and len(fqn) > 2:
            return str(fqn[1])
        return "warehouse"

    def _landing_keys(self, manifest: Mapping[str, Any]) -> dict[AssetKey, str]:
        keys: dict[AssetKey, str] = {}
        for props in manifest.get("sources", {}).values():
            if props.get("source_name") == LANDING_SOURCE:
                keys[self.get_asset_key(props)] = str(props["name"])
        return keys

    def get_asset_spec(
        self, manifest: Mapping[str, Any], unique_id: str, project: DbtProject | None
    ) -> AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        if unique_id.startswith("source."):
            return spec
        landing = self._landing_keys(manifest)
        if not any(dep.asset_key in landing for dep in spec.deps):
            return spec
        deps: list[AssetDep] = []
        seen: set[AssetKey] = set()
        for dep in spec.deps:
            table = landing.get(dep.asset_key)
            replacement = [dep] if table is None else [AssetDep(k) for k in self.upstream_of(table)]
            for d in replacement:
                if d.asset_key not in seen:
                    seen.add(d.asset_key)
                    deps.append(d)
        return spec.replace_attributes(deps=deps)


def upstream_by_table(cfg: Config | None, tables: Iterable[str]) -> dict[str, list[AssetKey]]:
    """For each landing table, the ingest assets of the configured sources that land it."""
    sources = cfg.sources if cfg else []
    out: dict[str, list[AssetKey]] = {}
    for table in tables:
        kinds = kinds_landing(table)
        keys = [raw_asset_key(s.name) for s in sources if s.kind in kinds]
        if keys:
            out[table] = keys
    return out


def _landing_tables(manifest_path: Path) -> list[str]:
    manifest = json.loads(manifest_path.read_text())
    return sorted(
        str(props["name"])
        for props in manifest.get("sources", {}).values()
        if props.get("source_name") == LANDING_SOURCE
    )


def build_dbt_assets(cfg: Config | None, has_config_asset: bool) -> AssetsDefinition | None:
    project = dbt_project()
    if project is None:
        return None
    translator = FleetDbtTranslator(
        upstream_by_table(cfg, _landing_tables(project.manifest_path)),
        CONFIG_TABLES_KEY if has_config_asset else None,
    )

    @dbt_assets(
        manifest=project.manifest_path,
        project=project,
        dagster_dbt_translator=translator,
        partitions_def=partitions_for(cfg),
        backfill_policy=SINGLE_RUN,
        name="dbt_warehouse",
    )
    def dbt_warehouse(
        context: AssetExecutionContext, dbt: DbtCliResource, fleet: FleetResource
    ) -> Iterator[Any]:
        home = fleet.home_path
        key_range = context.partition_key_range
        os.environ["FLEETLEDGER_HOME"] = str(home)  # dbt's profile reads it
        (home / "build").mkdir(parents=True, exist_ok=True)
        # every landing table has a schema file, so dbt reads a table no source fills
        write_schema_files(home)
        # a crashed write of a source this run did not ingest (its own are settled by ingest,
        # every other source's by the config step: this is for a run without that step),
        # reported beside the config step's findings of this run
        settled = [IngestFinding("crashed_write", m) for m in recover_crashed_writes(home)]
        add_ingest_findings(home, LANDING_FINDINGS_SOURCE, context.run.run_id, settled)
        for finding in settled:
            context.log.warning(f"landing zone: {finding.message}")
        # vars stay the same from run to run (the config's), so dbt parses only what changed;
        # what differs per run reaches the models as environment variables
        dbt_vars = _config_vars(fleet)
        cfg = load_config(config_path(home)) if config_path(home).exists() else Config()
        project_dir = Path(dbt.project_dir)
        span = recompute_span(
            home, date.fromisoformat(key_range.start[:10]), date.fromisoformat(key_range.end[:10])
        )
        warehouse = _warehouse_settings(fleet)
        # a run `fleetledger run` started has done this already (and tagged the refresh)
        set_aside = set_aside_damaged_history(home, context.run.run_id, warehouse.engine)
        if set_aside is not None:
            context.log.warning(set_aside.message)
        refresh = (
            context.run.tags.get(FULL_REFRESH_TAG)
            or (set_aside.reason if set_aside is not None else None)
            or full_refresh_reason(home, cfg, project_dir)
        )
        # the batches of the sample-grain models, read from every landed DCGM file's footer: a
        # full build's on DuckDB only (a run over its range recomputes a day at a time, so a
        # daily run reads no footer of the history; Spark runs one statement a model)
        batches = (
            day_batches(home, span, warehouse.day_batch_rows)
            if refresh and warehouse.engine == "duckdb"
            else []
        )
        on_duckdb = warehouse.engine == "duckdb"
        run_env = {
            # the Spark target's session and locations (nothing for DuckDB)
            **warehouse.dbt_env(home),
            "FLEETLEDGER_RUN_START": str(key_range.start),
            "FLEETLEDGER_RUN_END": str(key_range.end),
            # the days the day models recompute (macros/incremental.sql)
            "FLEETLEDGER_RECOMPUTE_START": span.first.isoformat(),
            "FLEETLEDGER_RECOMPUTE_END": span.last.isoformat(),
            # the first day of each batch a full build runs the sample-grain day models in
            # (macros/day_batches.sql)
            "FLEETLEDGER_DAY_BATCHES": ",".join(d.isoformat() for d in batches),
            # fct_data_health stamps this build's findings with the run
            "FLEETLEDGER_RUN_ID": context.run.run_id,
            "FLEETLEDGER_RUN_AT": datetime.now(UTC).strftime("%Y-%m-%d %H:%M:%S"),
            # the DuckDB memory limit and threads (`warehouse:`), read by profiles.yml, and the
            # warehouse files' folder: dbt runs in the home's build/ (orchestration/dbt_parse.py)
            **(shared_profile_env(warehouse) if on_duckdb else warehouse.env()),
            # dbt's file log (`build/dbt/<run id>/dbt.log`) at info, unless the environment asks
            # for more: at debug it writes every statement and event as JSON (12 MB a daily run
            # at 128 GPUs), about 2 s of the daily build's 20 (docs/performance.md)
            DBT_LOG_LEVEL_FILE: os.environ.get(DBT_LOG_LEVEL_FILE) or DEFAULT_DBT_FILE_LOG_LEVEL,
        }
        how = f"full refresh: {refresh}" if refresh else f"recomputing {span.first}..{span.last}"
        context.log.info(f"dbt build over {key_range.start}..{key_range.end} ({how})")
        # the first build of a home: the parse the run started at its start
        # (orchestration/dbt_parse.py)
        if adopt_prepared_parse(home):
            context.log.info("dbt: using the parse cache made at the run's start")
        elif seed_home_parse(home, cfg, project_dir):
            context.log.info("dbt: starting from the project's parse cache")
        target = build_target_path(home, context.run.run_id)
        record_day_batches(target, batches)
        if len(batches) > 1:
            context.log.info(
                f"the sample-grain day models build in {len(batches)} batches of days, from "
                + ", ".join(d.isoformat() for d in batches)
                + f" (warehouse.day_batch_rows: {warehouse.day_batch_rows:,} landed DCGM rows)"
            )
        args = ["build", "--vars", json.dumps(dbt_vars), *PIPELINE_BUILD_ARGS]
        if refresh:
            args.append("--full-refresh")
        # re-entrant: a `fleetledger run` already holds the lock; a run `dagster dev` launched
        # takes it here
        with home_lock(home), stop_children_on_sigterm(), environment(run_env):
            with guarded_build(
                home, span, build_inputs(cfg, project_dir), full_refresh=bool(refresh)
            ):
                workdir = dbt_working_dir(home) if on_duckdb else None
                with children_die_with_parent(dbt_cli_invocation, cwd=workdir):
                    invocation = dbt.cli(args, context=context, target_path=target)
                yield from _asset_events(context, invocation)
                if warehouse.engine == "spark":
                    # the marts stay Spark tables; the forecast, alert and publish steps and
                    # the app read their DuckDB export (fleetledger/publish.py)
                    counts = export_spark_warehouse(home, Path(warehouse.spark_warehouse_dir(home)))
                    context.log.info(f"exported {len(counts)} Spark tables to {home}/build")
        keep_partial_parse(target)

    return dbt_warehouse


def _config_vars(fleet: FleetResource) -> dict[str, Any]:
    """The config's `health:` and `economics:` settings as dbt vars (the defaults when there
    is no config)."""
    if not config_path(fleet.home_path).exists():
        return config_dbt_vars(None)
    return config_dbt_vars(fleet.load_config())


def _warehouse_settings(fleet: FleetResource) -> WarehouseSettings:
    """The config's `warehouse:` settings (the defaults when there is no config)."""
    if not config_path(fleet.home_path).exists():
        return WarehouseSettings()
    return fleet.load_config().warehouse


def _asset_events(context: AssetExecutionContext, invocation: DbtCliInvocation) -> Iterator[Any]:
    """`invocation.stream()`, except that a dbt node missing from the manifest the asset graph was
    built from (a model added while the run was in progress) is logged and skipped instead of
    failing the step with a KeyError; the next load of the code location picks it up."""
    skipped: set[str] = set()
    for event in invocation.stream_raw_events():
        try:
            yield from event.to_default_asset_events(
                manifest=invocation.manifest,
                dagster_dbt_translator=invocation.dagster_dbt_translator,
                context=context,
                target_path=invocation.target_path,
                project=invocation.project,
            )
        except KeyError as err:
            node = str(err.args[0]) if err.args else "?"
            if node not in skipped:
                skipped.add(node)
                context.log.warning(
                    f"dbt ran {node}, which is not in the asset graph of this run "
                    "(the dbt project changed after it was loaded); reload to see it"
                )


class FleetDbtCliResource(DbtCliResource):
    """dagster-dbt's resource without two start-up costs we never use (about 7 s a build on two
    cores): the dbt version comes from the installed dbt-core package (the executable is this
    environment's, `dbt_executable`) instead of a `dbt --version` child process, and no dbt
    adapter is loaded into the run's process (it serves only `fetch_row_counts` and
    `fetch_column_metadata`, which fleetledger does not call: the marts' counts come from the
    warehouse itself)."""

    @cached_property
    def _cli_version(self) -> version.Version:
        return version.parse(importlib.metadata.version("dbt-core"))

    def _initialize_dbt_core_adapter(self, args: Sequence[str]) -> Any:
        return None


def dbt_resource(cfg: Config | None = None) -> DbtCliResource | None:
    """The dbt CLI resource, on the dbt target of the config's `warehouse.engine`."""
    project = dbt_project()
    if project is None:
        return None
    target = (cfg.warehouse if cfg else WarehouseSettings()).dbt_target
    return FleetDbtCliResource(project_dir=project, dbt_executable=dbt_executable(), target=target)
