"""Run the whole pipeline (ingest → dbt build + tests → publish) without the UI.

`run_pipeline` materialises the selected assets for an inclusive date range as ONE in-process
Dagster run: the range travels as the `dagster/asset_partition_range_start|end` run tags and every
asset has a single-run backfill policy, so each ingest asset sees the whole list of days and dbt
builds the range once. It uses the same Definitions as `dagster dev`, and records the run in the
home's persistent Dagster instance (`$FLEETLEDGER_HOME/dagster/`, fleetledger/dagster_home.py),
so `dagster dev` on that instance shows it.

A run holds the home's lock (fleetledger/run_lock.py) from start to end; SIGTERM or the death of
the run stops its dbt child (fleetledger/child_processes.py).
"""

from __future__ import annotations

import os
import re
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import IO, Any

from fleetledger import child_processes
from fleetledger.child_processes import RunInterrupted, stop_children, stop_children_on_sigterm
from fleetledger.config import Config, ConfigError, config_path, load_config
from fleetledger.dagster_home import run_instance
from fleetledger.data_health import run_findings
from fleetledger.incremental import (
    DaySpan,
    full_refresh_reason,
    recompute_span,
    recorded_day_batches,
    set_aside_damaged_history,
)
from fleetledger.run_lock import HomeLocked, home_lock
from ingest.core.guards import ALLOW_SHRINK_TAG

__all__ = ["HomeLocked", "PipelineError", "PipelineResult", "RunInterrupted", "run_pipeline"]

ProgressFn = Callable[[str], None]


class PipelineError(RuntimeError):
    """A run that did not finish: an asset failed or a blocking check did not pass.

    The message names each failing asset or check and the reason; `failures` lists them."""

    def __init__(self, message: str, failures: list[str] | None = None) -> None:
        super().__init__(message)
        self.failures = failures or []


@dataclass
class CheckOutcome:
    asset: str
    check: str
    passed: bool
    severity: str
    blocking: bool
    description: str | None = None

    def __str__(self) -> str:
        text = f"check {self.check} on {self.asset}"
        return f"{text}: {self.description}" if self.description else text


@dataclass
class PipelineResult:
    home: Path
    start: date
    end: date
    run_id: str
    duration_s: float
    materialized: list[str] = field(default_factory=list)
    # metadata of each ingest asset (the IngestReport numbers), by source name
    ingest: dict[str, dict[str, Any]] = field(default_factory=dict)
    checks: list[CheckOutcome] = field(default_factory=list)
    published: Path | None = None
    # what the run found (fct_data_health rows of this run; fleetledger/data_health.py)
    health: list[Any] = field(default_factory=list)
    # what the run printed (dbt's log) when it was not echoed
    log_path: Path | None = None
    # why the build rebuilt every model (fleetledger/incremental.py); None: it recomputed the
    # days of `recomputed` only
    full_refresh: str | None = None
    # the days the build recomputed: the range, widened to the days of runs that did not finish
    # and to the day after a re-run day (fleetledger/incremental.py, recompute_span)
    recomputed: DaySpan | None = None
    # a DuckDB full build: the first day of each batch of days the sample-grain models ran in
    # (none: each model's SQL ran once; dbt_project/macros/day_batches.sql)
    day_batches: list[date] = field(default_factory=list)

    @property
    def checks_passed(self) -> int:
        return sum(c.passed for c in self.checks)

    @property
    def checks_failed(self) -> list[CheckOutcome]:
        return [c for c in self.checks if not c.passed]


@contextmanager
def _home_env(home: Path) -> Iterator[None]:
    old = os.environ.get("FLEETLEDGER_HOME")
    os.environ["FLEETLEDGER_HOME"] = str(home)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("FLEETLEDGER_HOME", None)
        else:
            os.environ["FLEETLEDGER_HOME"] = old


#: events Dagster may hand the event log at once (`DAGSTER_EVENT_BATCH_SIZE`): the "planned"
#: events of a run's start and the materialisations of one model's day partitions, each batch
#: stored in one transaction (fleetledger/dagster_storage.py); an operator's value wins
EVENT_BATCH_SIZE = "10000"


@contextmanager
def _event_batches() -> Iterator[None]:
    old = os.environ.get("DAGSTER_EVENT_BATCH_SIZE")
    if old is None:
        os.environ["DAGSTER_EVENT_BATCH_SIZE"] = EVENT_BATCH_SIZE
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("DAGSTER_EVENT_BATCH_SIZE", None)


@contextmanager
def _maybe_redirect(target: IO[str], redirect: bool) -> Iterator[None]:
    if not redirect:
        yield
        return
    with redirect_stdout(target), redirect_stderr(target):
        yield


def _validate_range(start: date, end: date, cfg: Config) -> None:
    # orchestration (Dagster) is imported when a run starts, not when the CLI does
    from orchestration.partitions import first_day, partitions_for

    partitions = partitions_for(cfg)
    if end < start:
        raise PipelineError(f"end date {end} is before start date {start}")
    if start < first_day(partitions):
        raise PipelineError(
            f"start date {start} is before the first partition {first_day(partitions)} "
            "(config key partitions_start)"
        )
    last = partitions.get_last_partition_key()
    if last is not None and end > date.fromisoformat(last):
        raise PipelineError(f"end date {end} is in the future (the latest partition is {last})")


def _metadata_value(value: Any) -> Any:
    inner = getattr(value, "value", value)
    return inner if isinstance(inner, int | float | str | bool) or inner is None else str(inner)


def _innermost(error: Any) -> Any:
    while getattr(error, "cause", None) is not None:
        error = error.cause
    return error


_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _error_text(error: Any) -> str:
    """The innermost cause of a step failure, as `Class: message` (ConfigError and messages
    that already name their class as they are), without colour codes or blank lines."""
    inner = _innermost(error)
    cls = getattr(inner, "cls_name", None) or ""
    message = _ANSI.sub("", getattr(inner, "message", None) or str(inner)).strip()
    if cls:
        # "IngestError: ingest.core.errors.IngestError: ..." → "IngestError: ..."
        prefix = re.compile(rf"^(?:[A-Za-z_][\w.]*\.)?{re.escape(cls)}: ")
        while prefix.match(message):
            message = prefix.sub("", message, count=1)
    lines = [line.rstrip() for line in message.splitlines() if line.strip()]
    message = "\n      ".join(lines)
    if not cls or cls in ("ConfigError", "DagsterExecutionStepExecutionError"):
        return message
    return f"{cls}: {message}"


def _asset_label(key: Any) -> str:
    return key.to_user_string() if hasattr(key, "to_user_string") else str(key)


def _fail_stale_runs(instance: Any) -> None:
    """Mark as failed the command-line runs the instance still shows as in progress: this run
    holds the home's lock, so their process has ended (killed) without saying so."""
    from dagster import DagsterRunStatus, RunsFilter

    stale = instance.get_runs(
        filters=RunsFilter(
            statuses=[DagsterRunStatus.STARTED, DagsterRunStatus.STARTING],
            tags={"fleetledger/trigger": "cli"},
        )
    )
    for run in stale:
        instance.report_run_failed(
            run, message="the run's process ended without finishing (killed or interrupted)"
        )


def run_pipeline(
    home: Path,
    start: date,
    end: date,
    sources: list[str] | None = None,
    *,
    progress: ProgressFn | None = None,
    log_level: str = "INFO",
    echo: bool = False,
    allow_shrink: list[str] | None = None,
    lock_timeout: float = 0.0,
    full_refresh: bool = False,
) -> PipelineResult:
    """Ingest `sources` (default: every configured source) for `start`..`end` (inclusive), build
    and test the warehouse over the range, and publish it; one Dagster run.

    What the run prints (Dagster's log at `log_level`, dbt's log) goes to
    `$FLEETLEDGER_HOME/logs/run-*.log`, or to stdout/stderr with `echo`; `progress` gets a line
    per step and asset. `allow_shrink` names the sources whose landed partitions may lose rows
    in this run (the landing guard, ingest/core/guards.py); it travels as a run tag, which a
    scheduled run does not carry. The build recomputes the days of the range only
    (docs/operations.md, "Incremental runs"); `full_refresh` rebuilds every model, as a change
    to a config key a model reads does by itself (`PipelineResult.full_refresh` says why).

    Raises `ConfigError` for an invalid config, `PipelineError` naming the failing asset or
    check and the reason when anything fails, `HomeLocked` when another run holds the home
    longer than `lock_timeout` seconds, and `RunInterrupted` when SIGTERM stopped the run.
    """
    home = home.resolve()
    say = progress or (lambda _msg: None)
    t0 = time.monotonic()
    # the cheap checks first: a bad config or source name fails before Dagster is imported
    cfg = load_config(config_path(home))  # raises ConfigError naming the key
    configured_names = [s.name for s in cfg.sources]
    for option, names in (("sources", sources), ("--allow-shrink", allow_shrink)):
        unknown = [s for s in names or [] if s not in configured_names]
        if unknown:
            raise ConfigError(
                f"{option}: no source named {', '.join(map(repr, unknown))} in "
                f"{config_path(home)} (configured: {', '.join(configured_names) or 'none'})"
            )

    # Dagster and the code location load when a run starts: the CLI imports this module at
    # start-up, and `fleetledger --help` should not pay for Dagster and dbt
    _validate_range(start, end, cfg)

    child_processes.clear_interruption()
    with home_lock(home, lock_timeout), stop_children_on_sigterm():
        try:
            return _run_locked(
                home,
                start,
                end,
                cfg,
                sources,
                say,
                t0,
                log_level,
                echo,
                allow_shrink,
                full_refresh,
            )
        finally:
            stop_children()  # a dbt child still running when the run ends is stopped
            # a parse no build adopted (a failed ingest): what it wrote goes
            from orchestration.dbt_parse import discard_prepared_parse

            discard_prepared_parse(home)


def _run_locked(
    home: Path,
    start: date,
    end: date,
    cfg: Config,
    sources: list[str] | None,
    say: ProgressFn,
    t0: float,
    log_level: str,
    echo: bool,
    allow_shrink: list[str] | None = None,
    full_refresh: bool = False,
) -> PipelineResult:
    from dagster import DagsterEventType
    from dagster._core.storage.tags import (
        ASSET_PARTITION_RANGE_END_TAG,
        ASSET_PARTITION_RANGE_START_TAG,
    )

    from orchestration.build import build_definitions
    from orchestration.config_assets import CONFIG_TABLES_KEY
    from orchestration.dbt import FULL_REFRESH_TAG, dbt_project_dir, dbt_resource, run_target_dir
    from orchestration.dbt_parse import prepare_home_parse, shared_profile_env
    from orchestration.ingest_assets import SOURCE_AVAILABLE_CHECK, raw_asset_key
    from orchestration.publish import WAREHOUSE_SNAPSHOT_KEY
    from orchestration.schedules import DAILY_JOB_NAME

    with _home_env(home), _event_batches():
        # a home's first build: dbt parses the project from here on, on the CPU that loading the
        # definitions and starting the run leave idle (orchestration/dbt_parse.py)
        profile_env = {
            "FLEETLEDGER_HOME": str(home),
            **cfg.warehouse.dbt_env(home),
            # the DuckDB settings (`warehouse:`) and, on DuckDB, the warehouse files' folder
            **(
                shared_profile_env(cfg.warehouse)
                if cfg.warehouse.engine == "duckdb"
                else cfg.warehouse.env()
            ),
        }
        prepare_home_parse(home, cfg, dbt_resource(cfg), profile_env)
        say("loading definitions")
        defs = build_definitions(home)
        job = defs.resolve_job_def(DAILY_JOB_NAME)
        all_keys = set(defs.resolve_all_asset_keys())
        source_keys = {raw_asset_key(s.name) for s in cfg.sources}
        wanted = source_keys if sources is None else {raw_asset_key(s) for s in sources}
        selection = sorted(
            (k for k in all_keys if k not in source_keys or k in wanted),
            key=lambda k: k.to_user_string(),
        )

        run_id = str(uuid.uuid4())
        instance = run_instance(home)
        _fail_stale_runs(instance)
        n_selected = len(selection)
        done: list[str] = []

        def listen(entry: Any) -> None:
            ev = entry.dagster_event
            if ev is None:
                return
            if ev.event_type == DagsterEventType.STEP_START:
                say(f"running {ev.step_key}")
            elif ev.event_type == DagsterEventType.ASSET_MATERIALIZATION:
                label = _asset_label(ev.asset_key)
                if label not in done:
                    done.append(label)
                    say(f"materialised {label} ({len(done)}/{n_selected})")
            elif ev.event_type == DagsterEventType.STEP_FAILURE:
                say(f"failed {ev.step_key}")

        instance.add_event_listener(run_id, listen)
        tags = {
            ASSET_PARTITION_RANGE_START_TAG: start.isoformat(),
            ASSET_PARTITION_RANGE_END_TAG: end.isoformat(),
            "fleetledger/trigger": "cli",
        }
        if allow_shrink:
            tags[ALLOW_SHRINK_TAG] = ",".join(sorted(set(allow_shrink)))
        set_aside = set_aside_damaged_history(home, run_id, cfg.warehouse.engine)
        refresh = full_refresh_reason(home, cfg, dbt_project_dir(), requested=full_refresh)
        if set_aside is not None:
            say(f"warning: {set_aside.message}")
            refresh = refresh if full_refresh else set_aside.reason
        if refresh:
            tags[FULL_REFRESH_TAG] = refresh
            say(f"full refresh: {refresh}")
        # what the dbt asset will recompute (it reads the same files before it builds)
        span = recompute_span(home, start, end)
        say(f"running {n_selected} assets over {start}..{end}")
        log_path = home / "logs" / f"run-{start}-{end}-{run_id[:8]}.log"
        log_path.parent.mkdir(parents=True, exist_ok=True)
        try:
            with log_path.open("w") as log_file, _maybe_redirect(log_file, not echo):
                result = job.execute_in_process(
                    run_config={"loggers": {"console": {"config": {"log_level": log_level}}}},
                    instance=instance,
                    asset_selection=selection,
                    tags=tags,
                    run_id=run_id,
                    raise_on_error=False,
                )
        finally:
            instance.dispose()
    interrupted = child_processes.interruption()
    if interrupted:
        raise RunInterrupted(f"{interrupted}; nothing was published (log: {log_path})")

    out = PipelineResult(
        home=home,
        start=start,
        end=end,
        run_id=run_id,
        duration_s=time.monotonic() - t0,
        log_path=None if echo else log_path,
        full_refresh=refresh,
        recomputed=None if refresh else span,
        day_batches=recorded_day_batches(run_target_dir(home, run_id)),
    )
    failures: list[str] = []
    step_assets: dict[str, list[str]] = {}
    for asset_def in defs.assets or []:
        keys = getattr(asset_def, "keys", None)
        op = getattr(asset_def, "op", None)
        if keys and op is not None:
            step_assets[op.name] = [_asset_label(k) for k in keys]

    for event in result.all_events:
        if event.event_type == DagsterEventType.ASSET_MATERIALIZATION:
            mat = event.step_materialization_data.materialization
            label = _asset_label(mat.asset_key)
            if label not in out.materialized:  # one event per partition
                out.materialized.append(label)
            if mat.asset_key.path[0] == "raw" and mat.asset_key != CONFIG_TABLES_KEY:
                out.ingest[mat.asset_key.path[-1]] = {
                    k: _metadata_value(v) for k, v in mat.metadata.items()
                }
            if mat.asset_key == WAREHOUSE_SNAPSHOT_KEY:
                out.published = home / "warehouse.duckdb"
        elif event.event_type == DagsterEventType.ASSET_CHECK_EVALUATION:
            ev = event.asset_check_evaluation_data
            outcome = CheckOutcome(
                asset=_asset_label(ev.asset_key),
                check=ev.check_name,
                passed=ev.passed,
                severity=ev.severity.value,
                blocking=bool(ev.blocking),
                description=ev.description,
            )
            out.checks.append(outcome)
            if not ev.passed and ev.blocking:
                failures.append(f"blocking {outcome} failed")
            elif not ev.passed and ev.check_name == SOURCE_AVAILABLE_CHECK:
                # the source's asset kept its landed data so the others could publish
                failures.append(f"asset {outcome.asset} failed: {ev.description}")
        elif event.event_type == DagsterEventType.STEP_FAILURE:
            step = event.step_key or "?"
            assets = step_assets.get(step)
            what = assets[0] if assets and len(assets) == 1 else f"step {step}"
            if assets and len(assets) > 1:
                what = f"step {step} ({len(assets)} dbt assets)"
            failures.append(f"asset {what} failed: {_error_text(event.step_failure_data.error)}")

    # a config error inside an asset is the user's error: raise it as such
    for event in result.all_events:
        if event.event_type == DagsterEventType.STEP_FAILURE:
            inner = _innermost(event.step_failure_data.error)
            if getattr(inner, "cls_name", None) == "ConfigError":
                raise ConfigError(str(getattr(inner, "message", "")).strip())

    if failures or not result.success:
        if not failures:
            failures.append("the run failed (see the Dagster event log)")
        skipped = sorted(
            _asset_label(k) for k in selection if _asset_label(k) not in set(out.materialized)
        )
        message = "pipeline run failed for {}..{}:\n  - {}".format(
            start, end, "\n  - ".join(failures)
        )
        if skipped:
            message += f"\n  ({len(skipped)} of {len(selection)} assets not materialised)"
        if out.published is not None:
            message += f"\n  the other sources were built and published: {out.published}"
        if out.log_path:
            message += f"\n  log: {out.log_path}"
        raise PipelineError(message, failures)

    if out.published is not None:
        out.health = run_findings(out.published, out.run_id)
    return out
