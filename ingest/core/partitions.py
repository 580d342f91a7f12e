"""Landing partitions, and the landing strategy of the day-partitioned file kinds.

`land_files` is the strategy of dcgm (files), kubernetes, kueue and power, and of slurm files:
- a location with `{date}` is globbed once per requested day D (D substituted as YYYY-MM-DD)
  and lands partition D, replaced whole; no files for D lands an empty partition (so a re-run
  clears stale data) and says so;
- a location without `{date}` is read whole and its rows are split by UTC day (the spec's
  `day` expression); only the requested days are landed.

The helpers (`land_partition`, `file_partitions`, `land_split`) are shared by the other
strategies (billing periods, run logs, sacct commands, Prometheus).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from datetime import date
from pathlib import Path

import polars as pl

from ingest.core.common import ReadResult, expand
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, land, land_frames, land_quarantine
from ingest.core.report import IngestReport
from ingest.core.spec import FileReader, LandContext

DATE_PLACEHOLDER = "{date}"


def land_partition(
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
    home: Path,
    table: str,
    source: str,
    result: ReadResult,
    key: pl.Expr,
    wanted: list[str],
    prefix: str,
    report: IngestReport,
    *,
    undated: str | None = None,
) -> None:
    """Land `result` split by `key` (a string partition value) into the wanted partitions.
    `undated` says what a row without a partition value lacks (the finding that counts them)."""
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
        if part_rows.height == 0 and part_q.height == 0:
            report.warn(
                "empty_partition",
                f"no rows for {prefix}{value}: landed an empty partition",
                day=_day(prefix, value),
            )
        land_partition(home, table, source, f"{prefix}{value}", part_rows, part_q, report)
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


def _day(prefix: str, value: str) -> date | None:
    return date.fromisoformat(value) if prefix == "date=" else None


def collect(read: FileReader, ctx: LandContext, files: list[Path], day: date | None) -> ReadResult:
    """Read `files` and add what they said to the report."""
    opts = ctx.options
    combined = ReadResult.concat(ctx.table, [read(f, day, ctx.source.name, opts) for f in files])
    ctx.report.files_read.extend(combined.files)
    ctx.report.sentinels_dropped += combined.sentinels_dropped
    ctx.report.warnings.extend(combined.warnings)
    return combined


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


def land_daily(ctx: LandContext) -> None:
    read = _reader(ctx)
    for day in ctx.days:
        pattern = ctx.location.replace(DATE_PLACEHOLDER, day.isoformat())
        files = expand(pattern)
        partition = f"date={day.isoformat()}"
        if not files:
            ctx.report.warn(
                "no_files_for_day",
                f"no files for {day} ({pattern}): landed an empty partition",
                day=day,
            )
            land_partition(
                ctx.home,
                ctx.table,
                ctx.source.name,
                partition,
                empty_frame(ctx.table),
                empty_frame("quarantine"),
                ctx.report,
            )
            continue
        _land_day_files(read, ctx, day, files)


def _land_day_files(read: FileReader, ctx: LandContext, day: date, files: list[Path]) -> None:
    """Land one day's files, one file at a time: each file's rows are written as they come
    (row groups), so a day of a large fleet never has to fit in memory at once."""
    assert ctx.spec.day is not None
    day_of = ctx.spec.day(ctx.table)
    report = ctx.report
    partition = f"date={day.isoformat()}"
    rejected: list[pl.DataFrame] = []
    elsewhere = 0
    opts = ctx.options

    def frames() -> Iterator[pl.DataFrame]:
        nonlocal elsewhere
        for f in files:
            res = read(f, day, ctx.source.name, opts)
            report.files_read.extend(res.files)
            report.sentinels_dropped += res.sentinels_dropped
            report.warnings.extend(res.warnings)
            rejected.append(res.quarantine)
            if res.rows.height:
                elsewhere += res.rows.filter(day_of != day).height
            yield res.rows

    _, n = land_frames(ctx.home, ctx.table, ctx.source.name, partition, frames())
    quarantine = pl.concat(rejected) if rejected else empty_frame("quarantine")
    land_quarantine(ctx.home, ctx.source.name, partition, quarantine)
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


def land_whole(ctx: LandContext, *, undated: str | None = None) -> None:
    """Read every file of the location and land the requested days of its rows. `undated`
    names what a row without a day lacks, for the warning that counts them."""
    read = _reader(ctx)
    assert ctx.spec.day is not None
    day_of = ctx.spec.day(ctx.table)
    files = expand(ctx.location)
    if not files:
        ctx.report.warn("no_files_match", f"no files match {ctx.location}")
    combined = collect(read, ctx, files, None)
    land_split(
        ctx.home,
        ctx.table,
        ctx.source.name,
        combined,
        day_of.cast(pl.String),
        [d.isoformat() for d in ctx.days],
        "date=",
        ctx.report,
        undated=undated,
    )
