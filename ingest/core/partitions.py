"""Landing partitions, and the landing strategy of the day-partitioned file kinds.

`land_files` is the strategy of dcgm (files), kubernetes, kueue and power, and of slurm files:
- a location with `{date}` is globbed once per requested day D (D substituted as YYYY-MM-DD)
  and lands partition D, replaced whole; no files for D is a gap (a `missing_day` warning): the
  landed partition of D is kept, never replaced by an empty one;
- a location without `{date}` is read whole and its rows are split by UTC day (the spec's
  `day` expression); only the requested days are landed.

A location that matches no file at all (for `{date}`: on no day) is an error of the source and
lands nothing. Every replacement goes through the source's landing guard (ingest/core/guards.py).

The helpers (`land_partition`, `file_partitions`, `land_split`) are shared by the other
strategies (billing periods, run logs, sacct commands, Prometheus).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from datetime import date
from pathlib import Path

import polars as pl

from ingest.core.common import ReadResult, expand
from ingest.core.duplicates import DuplicateFilter, Duplicates, drop_duplicates
from ingest.core.errors import IngestError, NoFilesMatch
from ingest.core.landing import empty_frame, land, land_frames, land_quarantine
from ingest.core.read_ahead import read_ahead
from ingest.core.report import IngestReport
from ingest.core.spec import FileReader, LandContext

DATE_PLACEHOLDER = "{date}"


def land_partition(
    ctx: LandContext,
    partition: str,
    rows: pl.DataFrame,
    quarantine: pl.DataFrame,
    *,
    reason: str | None = None,
    check: str = "empty_partition",
) -> bool:
    """Replace `partition` of the source's table (rows and quarantine) when its guard admits it
    (`ShrinkGuard.admit`: `reason` and `check` name an empty partition's finding). Returns
    whether it was replaced; a kept partition is not in `report.partitions`."""
    new = rows.height + quarantine.height
    if not ctx.guard.admit(
        ctx.home, ctx.table, partition, new, ctx.report, reason=reason, check=check
    ):
        return False
    land(ctx.home, ctx.table, ctx.source.name, partition, rows)
    land_quarantine(ctx.home, ctx.source.name, partition, quarantine)
    ctx.report.partitions.append(partition)
    ctx.report.rows_landed += rows.height
    ctx.report.rows_quarantined += quarantine.height
    return True


def file_partitions(
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


def land_split(
    ctx: LandContext,
    result: ReadResult,
    key: pl.Expr,
    wanted: list[str],
    prefix: str,
    *,
    undated: str | None = None,
) -> None:
    """Land `result` split by `key` (a string partition value) into the wanted partitions.
    `undated` says what a row without a partition value lacks (the finding that counts them)."""
    report = ctx.report
    rows = result.rows.with_columns(key.alias("_part"))
    file_part = file_partitions(rows, pl.col("_part"), result.files)
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
    n_orphan = q.filter(pl.col("x_source_file").is_in(orphan)).height if orphan else 0
    if n_orphan:
        report.warn(
            "quarantine_filed_under_first_day",
            f"rejected rows of files with no good rows were filed under {prefix}{wanted[0]}: "
            + ", ".join(orphan[:5]),
            "info",
            count=n_orphan,
        )
    for value in wanted:
        part_rows = rows.filter(pl.col("_part") == value).drop("_part")
        part_q = q_part.filter(pl.col("_part") == value).drop("_part")
        partition = f"{prefix}{value}"
        land_partition(ctx, partition, part_rows, part_q, reason=f"no rows for {partition}")
    undated_rows = rows.filter(pl.col("_part").is_null()).height
    if undated_rows:
        # no day: no run of any day will land them
        report.warn(
            "rows_without_day",
            f"{undated_rows} rows were not landed: {undated or 'they have no partition day'}",
            "data_loss",
            count=undated_rows,
        )
    outside = rows.filter(~pl.col("_part").is_in(wanted)).height
    if outside:
        # landed when a run asks for their days
        report.warn(
            "rows_outside_requested_days",
            f"{outside} rows outside the requested partitions were not landed (a run over "
            "their days lands them)",
            "info",
            count=outside,
        )
    q_outside = q_part.filter(~pl.col("_part").is_in(wanted)).height
    if q_outside:
        report.warn(
            "quarantine_outside_requested_days",
            f"{q_outside} rejected rows belong to partitions not requested and were not landed",
            "info",
            count=q_outside,
        )


def collect(read: FileReader, ctx: LandContext, files: list[Path], day: date | None) -> ReadResult:
    """Read `files` and add what they said to the report."""
    opts = ctx.options
    combined = ReadResult.concat(ctx.table, [read(f, day, ctx.source.name, opts) for f in files])
    ctx.report.files_read.extend(combined.files)
    ctx.report.sentinels_dropped += combined.sentinels_dropped
    ctx.report.warnings.extend(combined.warnings)
    report_blanks(ctx.report, combined.sentinels_dropped, day)
    return combined


def report_blanks(report: IngestReport, blanks: int, day: date | None) -> None:
    """An `info` finding for the DCGM blank values (no reading) dropped for a day or location."""
    if blanks:
        report.warn(
            "blank_values_dropped",
            f"{blanks} DCGM blank values (no reading: the int32, int64 or fp64 blank codes)"
            + (f" for {day}" if day else "")
            + " were dropped",
            "info",
            day=day,
            count=blanks,
        )


def _reader(ctx: LandContext) -> FileReader:
    if ctx.spec.read is None or ctx.spec.day is None:
        raise IngestError(f"source {ctx.source.name}: kind {ctx.spec.kind} has no file reader")
    return ctx.spec.read


def check_local(ctx: LandContext) -> None:
    """A location with a URL scheme the kind does not read is an error."""
    scheme = ctx.location.split("://", 1)[0] if "://" in ctx.location else None
    if scheme is not None and scheme not in ctx.spec.remote:
        raise IngestError(
            f"source {ctx.source.name}: remote locations are not supported yet: {ctx.location}"
        )


def land_files(ctx: LandContext) -> None:
    """The day-partitioned file strategy (module docstring)."""
    check_local(ctx)
    if DATE_PLACEHOLDER in ctx.location:
        land_daily(ctx)
    else:
        land_whole(ctx)


def no_files(ctx: LandContext, location: str, what: str = "location") -> NoFilesMatch:
    """The error of a location that matches no file at all: the source's landed data stays."""
    return NoFilesMatch(
        f"source {ctx.source.name}: {what} {location} matches no file; nothing was landed and "
        "its landed data is kept (check the path, or the folder the config resolves it from)"
    )


def land_daily(ctx: LandContext) -> None:
    """One partition per requested day, from the files its `{date}` pattern matches. A day with
    no file is a gap: a `missing_day` warning, and its landed partition is kept."""
    read = _reader(ctx)
    by_day = {
        day: expand(ctx.location.replace(DATE_PLACEHOLDER, day.isoformat())) for day in ctx.days
    }
    if not any(by_day.values()) and not expand(ctx.location.replace(DATE_PLACEHOLDER, "*")):
        raise no_files(ctx, ctx.location)
    for day, files in by_day.items():
        if files:
            _land_day_files(read, ctx, day, files)
            continue
        pattern = ctx.location.replace(DATE_PLACEHOLDER, day.isoformat())
        land_partition(
            ctx,
            f"date={day.isoformat()}",
            empty_frame(ctx.table),
            empty_frame("quarantine"),
            reason=f"no files for {day} ({pattern})",
            check="missing_day",
        )


def _land_day_files(read: FileReader, ctx: LandContext, day: date, files: list[Path]) -> None:
    """Land one day's files, one file at a time: each file's rows are written as they come
    (row groups), so a day of a large fleet never has to fit in memory at once; the next files
    are parsed on reader threads meanwhile (ingest/core/read_ahead.py), in file order. Rows that
    repeat an earlier row's `unique_key` in the partition are dropped and counted."""
    assert ctx.spec.day is not None
    day_of = ctx.spec.day(ctx.table)
    report = ctx.report
    partition = f"date={day.isoformat()}"
    rejected: list[pl.DataFrame] = []
    elsewhere = 0
    blanks = 0
    opts = ctx.options
    name = ctx.source.name
    dedupe = (
        DuplicateFilter(ctx.spec.unique_key, lambda f: read(f, day, name, opts).rows)
        if ctx.spec.unique_key
        else None
    )

    def frames() -> Iterator[pl.DataFrame]:
        nonlocal elsewhere, blanks
        parsed = read_ahead(lambda f: (f, read(f, day, name, opts)), files)
        for f, res in parsed:
            report.files_read.extend(res.files)
            report.sentinels_dropped += res.sentinels_dropped
            blanks += res.sentinels_dropped
            report.warnings.extend(res.warnings)
            rejected.append(res.quarantine)
            rows = res.rows if dedupe is None else dedupe.keep(f, res.rows)
            if rows.height:
                elsewhere += rows.filter(day_of != day).height
            yield rows

    kept = False

    def admit(n: int) -> bool:
        # asked once every file is read: the day's rows are written but not yet swapped in
        nonlocal kept
        new = n + sum(q.height for q in rejected)
        kept = not ctx.guard.admit(ctx.home, ctx.table, partition, new, report)
        return not kept

    _, n = land_frames(ctx.home, ctx.table, name, partition, frames(), admit=admit)
    if kept:
        return
    quarantine = pl.concat(rejected) if rejected else empty_frame("quarantine")
    land_quarantine(ctx.home, name, partition, quarantine)
    report.partitions.append(partition)
    report.rows_landed += n
    report.rows_quarantined += quarantine.height
    if elsewhere:
        report.warn(
            "rows_from_other_day",
            f"{elsewhere} rows in the files for {day} belong to another UTC day; "
            f"landed under {partition}",
            "info",
            day=day,
            count=elsewhere,
        )
    report_blanks(report, blanks, day)
    if dedupe is not None and dedupe.found.count:
        report_duplicates(report, dedupe.found, day)


def report_duplicates(report: IngestReport, found: Duplicates, day: date | None) -> None:
    """One finding for a partition's dropped duplicates, naming the files that held them:
    `info` when each repeats the kept row's value, else `warning` (a value was discarded)."""
    files = sorted(found.by_file.items(), key=lambda kv: (-kv[1], kv[0]))
    named = ", ".join(f"{f} ({n})" for f, n in files[:5])
    more = f" and {len(files) - 5} more files" if len(files) > 5 else ""
    differing = (
        f"; {found.differing} of them with another value than the sample kept"
        if found.differing
        else ""
    )
    report.warn(
        "duplicate_samples",
        f"{found.count} duplicate rows{f' for {day}' if day else ''} dropped (the same key "
        f"again: a file delivered twice or overlapping scrapes; the first is kept){differing}: "
        f"{named}{more}",
        "warning" if found.differing else "info",
        day=day,
        count=found.count,
    )


def land_whole(
    ctx: LandContext,
    *,
    undated: str | None = None,
    check: Callable[[ReadResult, IngestReport], None] | None = None,
) -> None:
    """Read every file of the location and land the requested days of its rows. `undated`
    names what a row without a day lacks, for the warning that counts them; `check` looks at
    everything read (before it is split into days) and may add findings to the report."""
    read = _reader(ctx)
    assert ctx.spec.day is not None
    day_of = ctx.spec.day(ctx.table)
    files = expand(ctx.location)
    if not files:
        raise no_files(ctx, ctx.location)
    combined = collect(read, ctx, files, None)
    if ctx.spec.unique_key:
        combined.rows, found = drop_duplicates(combined.rows, ctx.spec.unique_key)
        if found.count:
            report_duplicates(ctx.report, found, None)
    if check is not None:
        check(combined, ctx.report)
    land_split(
        ctx,
        combined,
        day_of.cast(pl.String),
        [d.isoformat() for d in ctx.days],
        "date=",
        undated=undated,
    )
