"""Incremental builds: when a run must rebuild every model, which days it recomputes, and how a
failed or interrupted build leaves the build warehouse as it was (docs/operations.md,
"Incremental runs").

The day models (macros/incremental.sql) keep their rows by day and a run recomputes the days of
its range. On DuckDB they live in `build/history.duckdb`, which is never copied: a build that
fails leaves the days of its range pending, and the next run recomputes them in every day model
(a full refresh that does not finish is done again by the next run). Everything they read that
is not a landed day is an input of every day: the config a model reads (teams, inventory, rate
cards, thresholds, currency rates, the `health:` settings) and the dbt project itself. After
each successful build `build/build_inputs.json` records a fingerprint of each; a run whose
inputs differ rebuilds everything (dbt `--full-refresh`) and says which key changed.

Before dbt writes, the build warehouse (everything but the day models) must be kept as it was.
When it is still the file the last publish copied (fleetledger/publish.py records both files'
size, mtime and inode), the published snapshot is that copy: the run writes
`warehouse.before-run.json` naming it and copies nothing. Otherwise the build warehouse is
copied beside itself (`warehouse.before-run.duckdb`). A build that fails puts the copy or the
snapshot back, and a run killed outright leaves either for the next run to put back before it
starts. The days of a run that did not finish stay pending (`build/pending_days.json`) and the
next run recomputes them too.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb

from fleetledger.config import Config
from fleetledger.config_warehouse import DEFAULT_DAY_BATCH_ROWS
from fleetledger.publish import (
    HISTORY_WAREHOUSE,
    build_is_published,
    build_path,
    checkpoint,
    file_stamp,
    history_path,
    published_is_unchanged,
    published_path,
)
from ingest.core.findings import IngestFinding
from ingest.core.findings_landing import BUILD_FINDINGS_SOURCE, land_ingest_findings
from ingest.core.guards import landed_rows
from ingest.core.landing import landed_partitions, partition_day, partition_dir

BUILD_INPUTS = Path("build") / "build_inputs.json"
PENDING_DAYS = Path("build") / "pending_days.json"
BEFORE_RUN = "warehouse.before-run.duckdb"
#: the build warehouse is the published snapshot named here (no copy was taken)
BEFORE_RUN_MARKER = "warehouse.before-run.json"
DBT_PROJECT_KEY = "dbt project"
#: the engine the day models are stored by and its version: the stored rows carry the engine's
#: hashes (the units' keys, macro unit_key), which another version may compute otherwise
ENGINE_KEY = "warehouse engine"
#: the data-health check of a damaged day-models file set aside (source BUILD_FINDINGS_SOURCE)
HISTORY_CHECK = "history_unreadable"
# config keys no model reads: what to ingest and from where, alerts, forecasts, the partition
# calendar, the landing guard and DuckDB's memory and threads; any other key rebuilds every day
NOT_MODEL_INPUTS = frozenset(
    {
        "sources",
        "source_roots",
        "alerts",
        "forecast",
        "partitions_start",
        "max_row_drop",
        "warehouse",
    }
)
# the dbt project files a build reads (the run artifacts under target/ and logs/ are outputs)
_PROJECT_INPUTS = ("dbt_project.yml", "models", "macros", "tests")


def _digest(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def project_digest(project_dir: Path) -> str:
    """One hash of every file of the dbt project a build reads (path and content)."""
    h = hashlib.sha256()
    for name in _PROJECT_INPUTS:
        root = project_dir / name
        files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        for path in files:
            h.update(str(path.relative_to(project_dir)).encode())
            h.update(b"\0")
            h.update(path.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


def engine_version(engine: str) -> str:
    """`duckdb 2.0.1`, `spark 3.5.9`: the engine that computes and stores the day models (the
    Python package's version; `spark` alone where no PySpark is installed, as with a cluster
    reached over thrift, whose xxhash64 is the same in every version)."""
    package = "pyspark" if engine == "spark" else "duckdb"
    try:
        return f"{engine} {importlib.metadata.version(package)}"
    except importlib.metadata.PackageNotFoundError:
        return engine


def build_inputs(cfg: Config, project_dir: Path) -> dict[str, str]:
    """The fingerprint of every input of every day: one hash per config key a model reads, one
    for the dbt project, and the engine and its version (ENGINE_KEY)."""
    dumped = cfg.model_dump(mode="json")
    inputs = {key: _digest(value) for key, value in dumped.items() if key not in NOT_MODEL_INPUTS}
    inputs[DBT_PROJECT_KEY] = project_digest(project_dir)
    inputs[ENGINE_KEY] = engine_version(cfg.warehouse.engine)
    return inputs


def changed_inputs(before: Mapping[str, str], now: Mapping[str, str]) -> list[str]:
    return sorted(k for k in set(before) | set(now) if before.get(k) != now.get(k))


def describe_change(keys: list[str]) -> str:
    """`config key `teams` changed`, `config keys `idle_threshold`, `teams` changed`, the dbt
    project, or the engine (another version, or a record from before the engine was one)."""
    config_keys = [k for k in keys if k not in (DBT_PROJECT_KEY, ENGINE_KEY)]
    parts = []
    if config_keys:
        names = ", ".join(f"`{k}`" for k in config_keys)
        parts.append(f"config key{'s' if len(config_keys) > 1 else ''} {names} changed")
    if DBT_PROJECT_KEY in keys:
        parts.append("the dbt project changed")
    if ENGINE_KEY in keys:
        parts.append("the warehouse engine or its version changed")
    return "; ".join(parts)


def full_refresh_reason(
    home: Path, cfg: Config, project_dir: Path, requested: bool = False
) -> str | None:
    """Why this run must rebuild every model, or None when it may recompute its days only."""
    if requested:
        return "requested (--full-refresh)"
    if not build_path(home).exists():
        return "no built warehouse yet"
    if cfg.warehouse.engine == "duckdb" and not history_path(home).exists():
        return f"no day models yet ({HISTORY_WAREHOUSE})"
    record = home / BUILD_INPUTS
    try:
        before = json.loads(record.read_text())
    except (FileNotFoundError, json.JSONDecodeError):
        return "no record of the inputs of the last build"
    keys = changed_inputs(before, build_inputs(cfg, project_dir))
    return describe_change(keys) if keys else None


#: what DuckDB says of a file it cannot read as a database: not one (garbage, emptied),
#: truncated, a block whose checksum does not match (a flipped bit), or written by a DuckDB whose
#: storage version this one cannot read. A file another process holds a lock on is none of
#: these: that build fails and says so.
_UNREADABLE = (
    "not a valid DuckDB database file",
    "Could not read enough bytes",
    "Corrupt database file",
    "Trying to read a database file with version number",
)


def set_aside_unreadable_history(home: Path, stamp: str) -> tuple[Path, str] | None:
    """Move a day-models file DuckDB cannot open (`build/history.duckdb`) to
    `build/history.unreadable-<stamp>.duckdb`, kept for inspection, and return where it went
    with DuckDB's error; None when there is no such file or it opens. The build then refreshes
    in full (`full_refresh_reason`: no day models yet): the day models are computed from the
    landing zone, so nothing is lost but the time of a full build. Only opening is checked; a
    file that opens and fails a query later fails that build loudly (docs/operations.md)."""
    path = history_path(home)
    if not path.exists():
        return None
    con = duckdb.connect()
    try:
        quoted = str(path).replace("'", "''")
        con.execute(f"attach '{quoted}' as checked (read_only)")
    except duckdb.Error as err:
        message = str(err).splitlines()[0]
        if not any(marker in message for marker in _UNREADABLE):
            raise
        moved = path.with_name(f"history.unreadable-{stamp}.duckdb")
        os.replace(path, moved)
        wal = path.with_name(f"{path.name}.wal")
        if wal.exists():  # never replayed into the next file: it goes with the one it belongs to
            os.replace(wal, moved.with_name(f"{moved.name}.wal"))
        return moved, message
    finally:
        con.close()
    return None


@dataclass(frozen=True)
class SetAside:
    """A damaged day-models file moved aside: what to warn of and why the build refreshes."""

    moved: Path
    message: str
    reason: str


def set_aside_damaged_history(home: Path, run_id: str, engine: str) -> SetAside | None:
    """`set_aside_unreadable_history` for run `run_id`, the warning landed as a data-health
    finding of the run (check `history_unreadable`, source `build`), so it reaches
    `fct_data_health` and the console summary. Called before the build by `fleetledger run`
    and by the dbt asset (a run Dagster launched); the second call finds nothing to move. Only
    the DuckDB engine has the file (on Spark the day models are Spark tables)."""
    if engine != "duckdb":
        return None
    found = set_aside_unreadable_history(home, run_id[:8])
    if found is None:
        return None
    moved, error = found
    message = (
        f"the day models' file {HISTORY_WAREHOUSE} could not be opened ({error}); it was moved "
        f"to {moved.relative_to(home)} and every model is rebuilt from the landing zone "
        "(delete the moved file once inspected)"
    )
    land_ingest_findings(
        home, BUILD_FINDINGS_SOURCE, run_id, [IngestFinding(HISTORY_CHECK, message)]
    )
    return SetAside(
        moved, message, f"the day models' file could not be opened (moved to {moved.name})"
    )


def record_build_inputs(home: Path, inputs: Mapping[str, str]) -> None:
    path = home / BUILD_INPUTS
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(dict(inputs), indent=2, sort_keys=True))
    tmp.replace(path)


def forget_build_inputs(home: Path) -> None:
    (home / BUILD_INPUTS).unlink(missing_ok=True)


@dataclass(frozen=True)
class DaySpan:
    first: date
    last: date


def pending_span(home: Path) -> DaySpan | None:
    try:
        raw = json.loads((home / PENDING_DAYS).read_text())
        return DaySpan(date.fromisoformat(raw["first"]), date.fromisoformat(raw["last"]))
    except (FileNotFoundError, json.JSONDecodeError, KeyError, ValueError):
        return None


def recompute_span(home: Path, first: date, last: date) -> DaySpan:
    """The days this run recomputes: its range, widened to the days of runs that did not
    finish building (their days landed; recomputing the days between is harmless), and to the
    day after it when that day was accounted already (a re-run of an earlier day): the range's
    last samples cover the next day's first minutes, so those change with them."""
    pending = pending_span(home)
    if pending is not None:
        first, last = min(first, pending.first), max(last, pending.last)
    if _accounted(home, last + timedelta(days=1)):
        last += timedelta(days=1)
    return DaySpan(first, last)


def day_batches(home: Path, span: DaySpan, max_rows: int = DEFAULT_DAY_BATCH_ROWS) -> list[date]:
    """The first day of each batch a full build runs the sample-grain day models in, over every
    accounted day and this run's span: consecutive days grouped while their landed DCGM rows
    (the Parquet footers of `raw/dcgm_samples/<source>/date=<day>/`) stay within `max_rows`. The
    first batch also takes every earlier time and the last every later one, so a landed row
    outside these days is still built. One batch (a single day or a small fleet's whole
    history) means the models run once."""
    days = {span.first, span.last}
    accounted = _partition_days(home, "accounted_days", "pipeline")
    days.update(accounted)
    rows: dict[date, int] = {}
    table = home / "raw" / "dcgm_samples"
    if table.is_dir():
        for source in (p for p in table.iterdir() if p.is_dir()):
            for day in _partition_days(home, "dcgm_samples", source.name):
                rows[day] = rows.get(day, 0) + landed_rows(source / f"date={day}")
    first, last = min(days), max(days)
    starts = [first]
    held = 0
    for offset in range((last - first).days + 1):
        day = first + timedelta(days=offset)
        n = rows.get(day, 0)
        if held and held + n > max_rows:
            starts.append(day)
            held = 0
        held += n
    return starts


#: the first day of each batch a full build ran the sample-grain models in, in the run's dbt
#: folder (`build/dbt/<run id>/`), for the run's summary
DAY_BATCHES_FILE = "day_batches.json"


def record_day_batches(target: Path, batches: list[date]) -> None:
    """Write the batches a build runs (none: the models' SQL runs once) into its dbt folder."""
    (target / DAY_BATCHES_FILE).write_text(json.dumps([d.isoformat() for d in batches]))


def recorded_day_batches(target: Path) -> list[date]:
    """The batches the build in the dbt folder `target` ran the sample-grain models in: the first
    day of each, or none (one statement a model: a run over its range, a small history)."""
    path = target / DAY_BATCHES_FILE
    if not path.is_file():
        return []
    starts = [date.fromisoformat(d) for d in json.loads(path.read_text())]
    return starts if len(starts) > 1 else []


def _partition_days(home: Path, table: str, source: str) -> list[date]:
    """The days of a landing table's landed `date=` partitions of one source."""
    days = []
    for partition in landed_partitions(home, table, source):
        try:
            day = partition_day(partition)
        except ValueError:
            continue
        if day is not None:
            days.append(day)
    return days


def _accounted(home: Path, day: date) -> bool:
    """Whether a run accounted `day` (fleetledger/config_tables.py, record_accounted_days)."""
    # the file, not the folder: a write killed between creating a new partition's folder and
    # renaming its file in leaves the folder empty (ingest/core/landing.py)
    return (
        partition_dir(home, "accounted_days", "pipeline", f"date={day}") / "part-0.parquet"
    ).exists()


def _mark_pending(home: Path, span: DaySpan) -> None:
    path = home / PENDING_DAYS
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps({"first": span.first.isoformat(), "last": span.last.isoformat()}))
    tmp.replace(path)


def _put_back(backup: Path, path: Path) -> None:
    Path(f"{path}.wal").unlink(missing_ok=True)
    os.replace(backup, path)


def _put_back_published(home: Path, marker: Path) -> None:
    """Copy the published snapshot over the build warehouse (the marker says it was the build's
    state before the run). A snapshot changed since leaves no state to put back: the build
    warehouse is removed and the inputs forgotten, so the next run rebuilds every model from
    the landed data."""
    path = build_path(home)
    try:
        stamp = json.loads(marker.read_text())["published"]
    except (FileNotFoundError, json.JSONDecodeError, KeyError):
        stamp = None
    if stamp is not None and published_is_unchanged(home, stamp):
        tmp = path.with_name(f".{path.name}.restore")
        shutil.copyfile(published_path(home), tmp)
        Path(f"{path}.wal").unlink(missing_ok=True)
        os.replace(tmp, path)
    else:
        path.unlink(missing_ok=True)
        Path(f"{path}.wal").unlink(missing_ok=True)
        forget_build_inputs(home)
    marker.unlink(missing_ok=True)


def restore_interrupted_build(home: Path) -> bool:
    """Put back what a killed run left (its build may be half-written): the copy of the build
    warehouse, or the published snapshot its marker names; True if it did."""
    path = build_path(home)
    backup = path.with_name(BEFORE_RUN)
    marker = path.with_name(BEFORE_RUN_MARKER)
    if backup.exists():
        _put_back(backup, path)
        marker.unlink(missing_ok=True)
        return True
    if marker.exists():
        _put_back_published(home, marker)
        return True
    return False


def _keep_state(home: Path, path: Path, backup: Path, marker: Path) -> None:
    """Keep the build warehouse's state before dbt writes: the published snapshot when the build
    is still that file (a marker, no copy), else a copy beside it."""
    if build_is_published(home):
        tmp = marker.with_name(f".{marker.name}.tmp")
        tmp.write_text(json.dumps({"published": file_stamp(published_path(home))}))
        tmp.replace(marker)
        return
    checkpoint(path)
    tmp = backup.with_name(f".{backup.name}.tmp")
    shutil.copyfile(path, tmp)
    tmp.replace(backup)


@contextmanager
def guarded_build(
    home: Path, span: DaySpan, inputs: Mapping[str, str], full_refresh: bool = False
) -> Iterator[None]:
    """Run a build so that, should it fail, the build warehouse is as it was before: its state is
    kept first (the published snapshot, or a copy) and put back on failure (a build with no
    warehouse before leaves none). The day models' file is not kept: the span stays pending, so
    the next run recomputes its days in every day model, and a `full_refresh` forgets the last
    build's inputs first, so the next run refreshes in full again unless this one finishes. On
    success the inputs' fingerprint is recorded and no day stays pending."""
    path = build_path(home)
    backup = path.with_name(BEFORE_RUN)
    marker = path.with_name(BEFORE_RUN_MARKER)
    restore_interrupted_build(home)
    existed = path.exists()
    _mark_pending(home, span)
    if full_refresh:
        forget_build_inputs(home)
    if existed:
        _keep_state(home, path, backup, marker)
    try:
        yield
    except BaseException:
        if existed:
            restore_interrupted_build(home)
        else:
            path.unlink(missing_ok=True)
            Path(f"{path}.wal").unlink(missing_ok=True)
            forget_build_inputs(home)
        raise
    # the kept state goes before the fingerprint: killed in between, the next run rebuilds
    # everything
    backup.unlink(missing_ok=True)
    marker.unlink(missing_ok=True)
    record_build_inputs(home, inputs)
    (home / PENDING_DAYS).unlink(missing_ok=True)
