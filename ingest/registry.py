"""Read a configured source for some days and land it: `ingest_source(cfg, source, days, home)`.

Partitioning (docs/landing.md, docs/generator-layout.md):
- telemetry / scheduler kinds land `date=YYYY-MM-DD` partitions. A location with `{date}` is
  globbed once per requested day D (D substituted as YYYY-MM-DD) and lands partition D, replaced
  whole; no files for D lands an empty partition (so a re-run clears stale data) and says so.
  A location without `{date}` is read whole and its rows are split by UTC day (dcgm: sample
  time; power: reading time; slurm: `x_snapshot_date`, else the start day, else submit day;
  kubernetes: snapshot day); only the requested days are landed.
- run_logs (job log files) are read whole on every run (no `{date}`: a job's log spans days);
  each checkpoint marker lands in its own UTC day's partition (`_ingest_run_logs`).
- billing kinds land every billing period (`period=YYYY-MM`) that contains a requested day,
  each replaced whole.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from fleetledger.config import Config, Source
from ingest.billing.periods import KIND_TABLES as BILLING_KIND_TABLES
from ingest.billing.periods import ingest_billing
from ingest.core.common import ReadResult, expand
from ingest.core.errors import IngestError
from ingest.core.landing import (
    empty_frame,
    land,
    land_frames,
    land_quarantine,
    write_schema_files,
)

KIND_TABLES = {
    "aws_cur": "aws_cur_lines",
    "gcp_billing": "gcp_billing_lines",
    "dcgm": "dcgm_samples",
    "slurm": "slurm_jobs",
    "kubernetes": "k8s_pods",
    "power": "power_readings",
    "kueue": "kueue_workloads",
    "run_logs": "run_log_checkpoints",
}
#: gcp_billing (files or bigquery://), focus, azure_cost, oci_cost, gcp_catalog: ingest/billing/periods.py
KIND_TABLES.update(BILLING_KIND_TABLES)
#: (kind, option `format`) → landing table, where a format lands a table of its own
FORMAT_TABLES = {
    ("kubernetes", "kube_state_metrics"): "k8s_gpu_requests",
    ("power", "node_gpu_rollup"): "node_gpu_power_hourly",
}
BILLING = {"aws_cur", "gcp_billing"}
#: kinds whose reader takes remote locations (aws_cur: s3://)
REMOTE_KINDS = {"aws_cur"}
DATE_PLACEHOLDER = "{date}"


@dataclass
class IngestReport:
    """What one `ingest_source` call did: partitions written (`date=…` / `period=…`), rows
    landed and quarantined, DCGM blank values dropped, files read, and warnings (empty
    partitions, rows outside the requested days, ...)."""

    source: str
    kind: str
    table: str
    partitions: list[str] = field(default_factory=list)
    rows_landed: int = 0
    rows_quarantined: int = 0
    sentinels_dropped: int = 0
    node_events_landed: int = 0  # slurm with option `events`: rows in `slurm_node_events`
    files_read: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.source} ({self.kind} → {self.table}): {self.rows_landed} rows in "
            f"{len(self.partitions)} partitions, {self.rows_quarantined} quarantined, "
            f"{len(self.files_read)} files"
            + (
                f", {self.sentinels_dropped} DCGM blank values dropped"
                if self.sentinels_dropped
                else ""
            )
        )


# --------------------------------------------------------------------------- file readers


def _reader(kind: str, source: Source) -> Callable[[Path, date | None], ReadResult]:
    opts: dict[str, Any] = dict(source.options)
    name = source.name
    if kind == "dcgm":
        from ingest.telemetry.dcgm import read_dcgm

        return lambda p, d: read_dcgm(p, source=name, options=opts)
    if kind == "slurm":
        from ingest.scheduler.slurm import read_sacct

        return lambda p, d: read_sacct(p, source=name, options=opts, snapshot_date=d)
    if kind == "kubernetes" and opts.get("format") == "kube_state_metrics":
        from ingest.scheduler.kubernetes_ksm import read_ksm

        return lambda p, d: read_ksm(p, source=name, options=opts)
    if kind == "kueue":
        from ingest.scheduler.kueue import read_workloads

        return lambda p, d: read_workloads(p, source=name, options=opts)
    if kind == "kubernetes":
        from ingest.scheduler.kubernetes import read_pods

        return lambda p, d: read_pods(p, source=name, options=opts)
    if kind == "power":
        from ingest.telemetry.power import read_power

        return lambda p, d: read_power(p, source=name, options=opts)
    if kind == "gcp_billing":
        from ingest.billing.gcp_billing import read_gcp_billing_jsonl

        return lambda p, d: read_gcp_billing_jsonl(p, source=name)
    raise IngestError(f"source {source.name}: kind {kind!r} is not supported yet")


def _day_expr(kind: str, table: str | None = None) -> pl.Expr:
    if kind in ("dcgm", "power") or table == "k8s_gpu_requests":
        return pl.col("time").dt.date()
    if kind == "kueue":
        return pl.col("snapshot_at").dt.date()
    if kind == "kubernetes":
        return pl.col("snapshot_at").dt.date()
    if kind == "slurm":
        return pl.coalesce(
            pl.col("x_snapshot_date"), pl.col("start").dt.date(), pl.col("submit").dt.date()
        )
    raise AssertionError(kind)


# --------------------------------------------------------------------------- landing helpers


def _land_partition(
    home: Path,
    table: str,
    source: str,
    partition: str,
    rows: pl.DataFrame,
    quarantine: pl.DataFrame,
    report: IngestReport,
) -> None:
    land(home, table, source, partition, rows)
    land_quarantine(home, source, partition, quarantine)
    report.partitions.append(partition)
    report.rows_landed += rows.height
    report.rows_quarantined += quarantine.height


def _file_partitions(
    rows: pl.DataFrame, key: pl.Expr, files: Iterable[str]
) -> dict[str, str | None]:
    """Each file's partition for its rejected rows: the partition most of its good rows fall
    in (ties: the earliest), so the choice does not depend on which days were requested."""
    first: dict[str, str | None] = dict.fromkeys(files)
    if rows.height:
        per_file = (
            rows.group_by("x_source_file", key.alias("k"))
            .len()
            .drop_nulls("k")
            .sort(["x_source_file", "len", "k"], descending=[False, True, False])
            .unique("x_source_file", keep="first", maintain_order=True)
        )
        for f, k, _ in per_file.iter_rows():
            first[f] = k
    return first


def _land_split(
    home: Path,
    table: str,
    source: str,
    result: ReadResult,
    key: pl.Expr,
    wanted: list[str],
    prefix: str,
    report: IngestReport,
) -> None:
    """Land `result` split by `key` (a string partition value) into the wanted partitions."""
    rows = result.rows.with_columns(key.alias("_part"))
    file_part = _file_partitions(rows, pl.col("_part"), result.files)
    q = result.quarantine
    mapping = pl.DataFrame(
        {
            "x_source_file": list(file_part),
            "_part": [v or wanted[0] for v in file_part.values()],
        },
        schema={"x_source_file": pl.String, "_part": pl.String},
    )
    q_part = q.join(mapping, on="x_source_file", how="left").with_columns(
        pl.col("_part").fill_null(wanted[0])
    )
    orphan = [f for f, v in file_part.items() if v is None]
    if orphan and q.filter(pl.col("x_source_file").is_in(orphan)).height:
        report.warnings.append(
            f"rejected rows of files with no good rows were filed under {prefix}{wanted[0]}: "
            + ", ".join(orphan[:5])
        )
    for value in wanted:
        part_rows = rows.filter(pl.col("_part") == value).drop("_part")
        part_q = q_part.filter(pl.col("_part") == value).drop("_part")
        if part_rows.height == 0 and part_q.height == 0:
            report.warnings.append(f"no rows for {prefix}{value}: landed an empty partition")
        _land_partition(home, table, source, f"{prefix}{value}", part_rows, part_q, report)
    outside = rows.filter(~pl.col("_part").is_in(wanted) | pl.col("_part").is_null()).height
    if outside:
        report.warnings.append(f"{outside} rows outside the requested partitions were not landed")
    q_outside = q_part.filter(~pl.col("_part").is_in(wanted)).height
    if q_outside:
        report.warnings.append(
            f"{q_outside} rejected rows belong to partitions not requested and were not landed"
        )


def source_table(source: Source) -> str:
    """The landing table a source fills: its format's when that lands a table of its own
    (`FORMAT_TABLES`), else its kind's."""
    fmt = source.options.get("format")
    return FORMAT_TABLES.get((source.kind, str(fmt)), KIND_TABLES.get(source.kind, source.kind))


def _is_sacct_command(location: str, source: Source) -> bool:
    from ingest.scheduler.slurm import is_command_source

    return is_command_source(location, dict(source.options))


def _ingest_sacct_command(
    source: Source, table: str, days: list[date], home: Path, report: IngestReport
) -> None:
    """slurm with option `command: true` (or location `sacct://`): run `sacct` once per
    requested UTC day window, never once per job, and land each day's output as that day's
    partition (`x_snapshot_date` = the day). Every window runs before anything is landed, so a
    failing call lands nothing."""
    from ingest.scheduler.slurm import run_sacct

    opts = dict(source.options)
    results = [(day, run_sacct(day, source=source.name, options=opts)) for day in days]
    for day, result in results:
        report.files_read.extend(result.files)
        report.warnings.extend(result.warnings)
        _land_partition(
            home,
            table,
            source.name,
            f"date={day.isoformat()}",
            result.rows,
            result.quarantine,
            report,
        )


# --------------------------------------------------------------------------- entry point


def ingest_source(cfg: Config, source: Source, days: list[date], home: Path) -> IngestReport:
    """Read `source` for `days` and land its partitions under `home/raw/`. Raises IngestError
    (nothing of the failing partition is landed) when a file cannot be parsed at all."""
    kind = source.kind
    if kind not in KIND_TABLES:
        raise IngestError(f"source {source.name}: kind {kind!r} is not supported yet")
    table = source_table(source)
    home = Path(home)
    write_schema_files(home)
    report = IngestReport(source=source.name, kind=kind, table=table)
    if not days:
        report.warnings.append("no days requested: nothing landed")
        return report
    days = sorted(set(days))
    location = cfg.resolve(source.location)
    if kind in BILLING_KIND_TABLES:
        ingest_billing(cfg, source, location, days, home, report)
        return report
    sacct_command = kind == "slurm" and _is_sacct_command(location, source)
    if kind == "dcgm" and source.options.get("format") == "prometheus_api":
        _ingest_prometheus(source, table, location, days, home, report)
        return report
    if kind == "run_logs":
        _ingest_run_logs(source, table, location, days, home, report)
        return report
    if "://" in location and kind not in REMOTE_KINDS and not sacct_command:
        raise IngestError(
            f"source {source.name}: remote locations are not supported yet: {location}"
        )
    if sacct_command:
        _ingest_sacct_command(source, table, days, home, report)
    elif kind in BILLING:
        _ingest_billing(source, kind, table, location, days, home, report)
    elif DATE_PLACEHOLDER in location:
        _ingest_daily(source, kind, table, location, days, home, report)
    else:
        _ingest_whole(source, kind, table, location, days, home, report)
    if kind == "slurm" and source.options.get("events"):
        _ingest_node_events(cfg, source, days, home, report)
    return report


def _collect(
    reader: Callable[[Path, date | None], ReadResult],
    files: list[Path],
    day: date | None,
    table: str,
    report: IngestReport,
) -> ReadResult:
    results = [reader(f, day) for f in files]
    combined = ReadResult.concat(table, results)
    report.files_read.extend(combined.files)
    report.sentinels_dropped += combined.sentinels_dropped
    report.warnings.extend(combined.warnings)
    return combined


def _ingest_daily(
    source: Source,
    kind: str,
    table: str,
    location: str,
    days: list[date],
    home: Path,
    report: IngestReport,
) -> None:
    reader = _reader(kind, source)
    for day in days:
        pattern = location.replace(DATE_PLACEHOLDER, day.isoformat())
        files = expand(pattern)
        partition = f"date={day.isoformat()}"
        if not files:
            report.warnings.append(f"no files for {day} ({pattern}): landed an empty partition")
            _land_partition(
                home,
                table,
                source.name,
                partition,
                empty_frame(table),
                empty_frame("quarantine"),
                report,
            )
            continue
        _land_day_files(reader, kind, table, source.name, day, files, home, report)


def _land_day_files(
    reader: Callable[[Path, date | None], ReadResult],
    kind: str,
    table: str,
    source: str,
    day: date,
    files: list[Path],
    home: Path,
    report: IngestReport,
) -> None:
    """Land one day's files, one file at a time: each file's rows are written as they come
    (row groups), so a day of a large fleet never has to fit in memory at once."""
    partition = f"date={day.isoformat()}"
    rejected: list[pl.DataFrame] = []
    elsewhere = 0

    def frames() -> Iterator[pl.DataFrame]:
        nonlocal elsewhere
        for f in files:
            res = reader(f, day)
            report.files_read.extend(res.files)
            report.sentinels_dropped += res.sentinels_dropped
            report.warnings.extend(res.warnings)
            rejected.append(res.quarantine)
            if res.rows.height:
                elsewhere += res.rows.filter(_day_expr(kind, table) != day).height
            yield res.rows

    _, n = land_frames(home, table, source, partition, frames())
    quarantine = pl.concat(rejected) if rejected else empty_frame("quarantine")
    land_quarantine(home, source, partition, quarantine)
    report.partitions.append(partition)
    report.rows_landed += n
    report.rows_quarantined += quarantine.height
    if elsewhere:
        report.warnings.append(
            f"{elsewhere} rows in the files for {day} belong to another UTC day; "
            f"landed under {partition}"
        )


def _ingest_whole(
    source: Source,
    kind: str,
    table: str,
    location: str,
    days: list[date],
    home: Path,
    report: IngestReport,
) -> None:
    reader = _reader(kind, source)
    files = expand(location)
    if not files:
        report.warnings.append(f"no files match {location}")
    combined = _collect(reader, files, None, table, report)
    if kind == "slurm" and combined.rows.height:
        undated = combined.rows.filter(_day_expr(kind, table).is_null()).height
        if undated:
            report.warnings.append(f"{undated} jobs have no snapshot, start or submit day")
    _land_split(
        home,
        table,
        source.name,
        combined,
        _day_expr(kind, table).cast(pl.String),
        [d.isoformat() for d in days],
        "date=",
        report,
    )


def _ingest_aws_cur(
    source: Source,
    table: str,
    location: str,
    periods: list[str],
    home: Path,
    report: IngestReport,
) -> None:
    """Land each requested billing period from its latest CUR manifest (local folder or
    s3://), replacing the period whole, then record the delivery (`aws_cur_deliveries`). A
    period with no manifest lands empty. A period that fails to read raises before anything of
    it is landed."""
    from ingest.billing.aws_cur import CurExport
    from ingest.billing.aws_deliveries import cur_source_totals, record_delivery
    from ingest.billing.periods import TOTALS_TABLE

    export = CurExport(location, dict(source.options))
    latest = export.latest()
    for period in periods:
        partition = f"period={period}"
        if period not in latest:
            report.warnings.append(
                f"no manifest for BILLING_PERIOD={period}: landed an empty partition"
            )
            _land_partition(
                home,
                table,
                source.name,
                partition,
                empty_frame(table).select("x_source", "x_source_file", "x_line_number"),
                empty_frame("quarantine"),
                report,
            )
            land(home, TOTALS_TABLE, source.name, partition, empty_frame(TOTALS_TABLE))
            continue
        manifest, warnings = latest[period]
        delivery = export.read(manifest, source=source.name)
        result = delivery.result
        report.files_read.extend(result.files)
        report.warnings.extend([*warnings, *result.warnings])
        _land_partition(home, table, source.name, partition, result.rows, result.quarantine, report)
        land(
            home,
            TOTALS_TABLE,
            source.name,
            partition,
            cur_source_totals(delivery, source.name, table),
        )
        record_delivery(home, source.name, delivery)


def _ingest_billing(
    source: Source,
    kind: str,
    table: str,
    location: str,
    days: list[date],
    home: Path,
    report: IngestReport,
) -> None:
    periods = sorted({d.strftime("%Y-%m") for d in days})
    if kind == "aws_cur":
        _ingest_aws_cur(source, table, location, periods, home, report)
        return
    raise AssertionError(f"{kind} is landed by ingest.billing.periods")


NODE_EVENTS_TABLE = "slurm_node_events"


def _ingest_node_events(
    cfg: Config, source: Source, days: list[date], home: Path, report: IngestReport
) -> None:
    """Land `sacctmgr show event` output (slurm option `events`: a path or glob, `{date}` not
    used: the file covers a window) into `slurm_node_events`, partitioned by the UTC day of
    TimeStart. Lands the requested days, plus the start day of every event that overlaps them
    (an outage that began earlier and closed since is replaced by its closed row). Rejected
    lines go to `raw/quarantine/<source>.events/` (the jobs' quarantine is not touched)."""
    from ingest.scheduler.slurm_events import read_node_events

    location = cfg.resolve(str(source.options["events"]))
    if "://" in location:
        raise IngestError(
            f"source {source.name}: remote event locations are not supported yet: {location}"
        )
    files = expand(location)
    if not files:
        report.warnings.append(f"no node event files match {location}")
    opts = dict(source.options)
    result = ReadResult.concat(
        NODE_EVENTS_TABLE, [read_node_events(f, source=source.name, options=opts) for f in files]
    )
    report.files_read.extend(result.files)
    report.warnings.extend(result.warnings)
    rows = result.rows.with_columns(_day=pl.col("time_start").dt.date())
    first, last = days[0], days[-1]
    overlapping = rows.filter(
        (pl.col("_day") < first)
        & (pl.col("time_end").is_null() | (pl.col("time_end").dt.date() >= first))
    )["_day"].to_list()
    wanted = sorted(set(days) | set(overlapping))
    q_source = f"{source.name}.events"
    for day in wanted:
        partition = f"date={day.isoformat()}"
        part = rows.filter(pl.col("_day") == day).drop("_day")
        land(home, NODE_EVENTS_TABLE, source.name, partition, part)
        report.node_events_landed += part.height
        if day in days:
            # rejected lines have no day: they are filed with the first requested day
            q = result.quarantine if day == first else result.quarantine.clear()
            land_quarantine(home, q_source, partition, q)
            report.rows_quarantined += q.height
    outside = rows.filter(pl.col("_day") > last).height
    if outside:
        report.warnings.append(f"{outside} node events start after {last} and were not landed")


def _ingest_prometheus(
    source: Source, table: str, url: str, days: list[date], home: Path, report: IngestReport
) -> None:
    """dcgm from a live Prometheus (option `format: prometheus_api`, location = its URL): each
    day is asked for chunk by chunk (ingest/telemetry/dcgm_prometheus.py), checkpointed under
    `<home>/state/dcgm_prometheus/<source>/date=D/` and landed whole; the checkpoints of a
    landed day are deleted, those of a failed day let the next run resume."""
    from ingest.telemetry.dcgm_prometheus import Checkpoints, read_prometheus_day

    for day in days:
        partition = f"date={day.isoformat()}"
        state = home / "state" / "dcgm_prometheus" / source.name / partition
        result = read_prometheus_day(
            url, day, source=source.name, options=dict(source.options), state_dir=state
        )
        report.files_read.extend(result.files)
        report.sentinels_dropped += result.sentinels_dropped
        if result.rows.height == 0:
            report.warnings.append(f"no samples for {day} from {url}: landed an empty partition")
        _land_partition(home, table, source.name, partition, result.rows, result.quarantine, report)
        Checkpoints(state).clear()


def _ingest_run_logs(
    source: Source, table: str, location: str, days: list[date], home: Path, report: IngestReport
) -> None:
    """Job log files (kind `run_logs`): every file of the location is read (a job's log spans
    days and grows), each checkpoint marker is landed in the partition of its UTC day, and each
    requested day is replaced whole, so re-landing a day never duplicates a marker. A rejected
    marker goes to its own day's quarantine partition when its time is known, else to the day
    most of its file's markers fall on, else to the first requested day."""
    from ingest.scheduler.run_logs import PARTITION_DAY, UNMATCHED_WARNING, RunLogOptions, read_run_log

    unmatched_suffix = f": {UNMATCHED_WARNING}"

    if DATE_PLACEHOLDER in location or "://" in location:
        raise IngestError(
            f"source {source.name}: a run_logs location is a local path or glob read whole "
            f"(no {DATE_PLACEHOLDER}, no URL): {location}"
        )
    opts = RunLogOptions.parse(dict(source.options), source.name)
    files = expand(location)
    if not files:
        report.warnings.append(f"no files match {location}")
    result = ReadResult.concat(
        table, [read_run_log(f, source=source.name, options=opts) for f in files]
    )
    report.files_read.extend(result.files)
    unmatched = [w for w in result.warnings if w.endswith(unmatched_suffix)]
    if unmatched:
        report.warnings.append(
            f"{len(unmatched)} files match no job (option job_from_path): "
            + ", ".join(w.removesuffix(unmatched_suffix) for w in unmatched[:5])
        )
    rows = result.rows.with_columns(_part=pl.col("checkpoint_at").dt.date().cast(pl.String))
    wanted = [d.isoformat() for d in days]
    file_part = _file_partitions(rows, pl.col("_part"), result.files)
    q = result.quarantine
    by_file = pl.DataFrame(
        {"x_source_file": list(file_part), "_file_part": list(file_part.values())},
        schema={"x_source_file": pl.String, "_file_part": pl.String},
    )
    q = q.join(by_file, on="x_source_file", how="left").with_columns(
        _part=pl.coalesce(
            pl.col(PARTITION_DAY).cast(pl.String), pl.col("_file_part"), pl.lit(wanted[0])
        )
    )
    q = q.drop(PARTITION_DAY, "_file_part")
    for value in wanted:
        _land_partition(
            home,
            table,
            source.name,
            f"date={value}",
            rows.filter(pl.col("_part") == value).drop("_part"),
            q.filter(pl.col("_part") == value).drop("_part"),
            report,
        )
