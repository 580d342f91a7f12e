"""The landing strategies of the scheduler kinds that are more than "files by day":

- slurm: files (`land_files`), or `sacct` run once per requested day (option `command: true` or
  location `sacct://`), plus `sacctmgr show event` output into `slurm_node_events` (option
  `events`);
- run_logs: job log files read whole, each checkpoint marker landed in its UTC day.
"""

from __future__ import annotations

from datetime import date

import polars as pl

from ingest.core.common import ReadResult, expand
from ingest.core.errors import IngestError
from ingest.core.landing import land, land_quarantine
from ingest.core.partitions import (
    DATE_PLACEHOLDER,
    check_local,
    file_partitions,
    land_daily,
    land_partition,
    land_whole,
    no_files,
)
from ingest.core.spec import LandContext
from ingest.scheduler.run_logs import (
    PARTITION_DAY,
    UNMATCHED_WARNING,
    RunLogOptions,
    read_run_log,
)
from ingest.scheduler.slurm_command import is_command_source, run_sacct
from ingest.scheduler.slurm_events import read_node_events
from ingest.scheduler.slurm_order import export_order_check

NODE_EVENTS_TABLE = "slurm_node_events"


def land_slurm(ctx: LandContext) -> None:
    if is_command_source(ctx.location, ctx.options):
        land_sacct_command(ctx)
    else:
        check_local(ctx)
        if DATE_PLACEHOLDER in ctx.location:
            land_daily(ctx)
        else:
            land_whole(
                ctx,
                undated="jobs have no snapshot, start or submit day",
                check=export_order_check,
            )
    if ctx.source.options.get("events"):
        land_node_events(ctx)


def land_sacct_command(ctx: LandContext) -> None:
    """Run `sacct` once per requested UTC day window, never once per job, and land each day's
    output as that day's partition (`x_snapshot_date` = the day). Every window runs before
    anything is landed, so a failing call lands nothing."""
    opts = ctx.options
    results = [(day, run_sacct(day, source=ctx.source.name, options=opts)) for day in ctx.days]
    for day, result in results:
        ctx.report.files_read.extend(result.files)
        ctx.report.warnings.extend(result.warnings)
        land_partition(
            ctx,
            f"date={day.isoformat()}",
            result.rows,
            result.quarantine,
            reason=f"sacct printed no job for {day}",
        )


def land_node_events(ctx: LandContext) -> None:
    """Land `sacctmgr show event` output (slurm option `events`: a path or glob, `{date}` not
    used: the file covers a window) into `slurm_node_events`, partitioned by the UTC day of
    TimeStart. Lands the requested days, plus the start day of every event that overlaps them
    (an outage that began earlier and closed since is replaced by its closed row). Rejected
    lines go to `raw/quarantine/<source>.events/` (the jobs' quarantine is not touched)."""
    source, days, home, report = ctx.source, ctx.days, ctx.home, ctx.report
    location = ctx.cfg.resolve(str(source.options["events"]))
    if "://" in location:
        raise IngestError(
            f"source {source.name}: remote event locations are not supported yet: {location}"
        )
    files = expand(location)
    if not files:
        raise no_files(ctx, location, "option events")
    opts = ctx.options
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
    wanted: list[date] = sorted(set(days) | set(overlapping))
    q_source = f"{source.name}.events"
    for day in wanted:
        partition = f"date={day.isoformat()}"
        part = rows.filter(pl.col("_day") == day).drop("_day")
        # rejected lines have no day: they are filed with the first requested day
        q = result.quarantine if day == first else result.quarantine.clear()
        requested = day in days  # an overlapping day's quarantine is not replaced
        new = part.height + (q.height if requested else 0)
        # an empty day is common (events are rare): only one that had events is reported
        if not ctx.guard.admit(
            home,
            NODE_EVENTS_TABLE,
            partition,
            new,
            report,
            quarantine_source=q_source,
            with_quarantine=requested,
        ):
            continue
        land(home, NODE_EVENTS_TABLE, source.name, partition, part)
        report.node_events_landed += part.height
        if requested:
            land_quarantine(home, q_source, partition, q)
            report.rows_quarantined += q.height
    outside = rows.filter(pl.col("_day") > last).height
    if outside:
        report.warn(
            "rows_outside_requested_days",
            f"{outside} node events start after {last} and were not landed (a run over their "
            "days lands them)",
            "info",
            count=outside,
        )


def land_run_logs(ctx: LandContext) -> None:
    """Job log files (kind `run_logs`): every file of the location is read (a job's log spans
    days and grows), each checkpoint marker is landed in the partition of its UTC day, and each
    requested day is replaced whole, so re-landing a day never duplicates a marker. A rejected
    marker goes to its own day's quarantine partition when its time is known, else to the day
    most of its file's markers fall on, else to the first requested day."""
    source, location, table, report = ctx.source, ctx.location, ctx.table, ctx.report
    unmatched_suffix = f": {UNMATCHED_WARNING}"
    if DATE_PLACEHOLDER in location or "://" in location:
        raise IngestError(
            f"source {source.name}: a run_logs location is a local path or glob read whole "
            f"(no {DATE_PLACEHOLDER}, no URL): {location}"
        )
    opts = RunLogOptions.parse(ctx.options, source.name)
    files = expand(location)
    if not files:
        raise no_files(ctx, location)
    result = ReadResult.concat(
        table, [read_run_log(f, source=source.name, options=opts) for f in files]
    )
    report.files_read.extend(result.files)
    unmatched = [str(w) for w in result.warnings if str(w).endswith(unmatched_suffix)]
    if unmatched:
        report.warn(
            "run_log_without_job",
            f"{len(unmatched)} files match no job (option job_from_path): "
            + ", ".join(w.removesuffix(unmatched_suffix) for w in unmatched[:5]),
            count=len(unmatched),
        )
    rows = result.rows.with_columns(_part=pl.col("checkpoint_at").dt.date().cast(pl.String))
    wanted = [d.isoformat() for d in ctx.days]
    file_part = file_partitions(rows, pl.col("_part"), result.files)
    by_file = pl.DataFrame(
        {"x_source_file": list(file_part), "_file_part": list(file_part.values())},
        schema={"x_source_file": pl.String, "_file_part": pl.String},
    )
    q = result.quarantine.join(by_file, on="x_source_file", how="left").with_columns(
        _part=pl.coalesce(
            pl.col(PARTITION_DAY).cast(pl.String), pl.col("_file_part"), pl.lit(wanted[0])
        )
    )
    q = q.drop(PARTITION_DAY, "_file_part")
    for value in wanted:
        land_partition(
            ctx,
            f"date={value}",
            rows.filter(pl.col("_part") == value).drop("_part"),
            q.filter(pl.col("_part") == value).drop("_part"),
        )
