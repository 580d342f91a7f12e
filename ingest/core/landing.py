"""The raw landing zone: table schemas and atomic partition writes (see docs/landing.md).

Layout: `<home>/raw/<table>/<source>/<partition>/part-0.parquet`, where a partition is
`date=YYYY-MM-DD` or `period=YYYY-MM`. A partition's file is written under a hidden temporary
name beside it (`.<partition>.<token>.partial`, which no `*.parquet` glob reads) and renamed
over `part-0.parquet` in one step, so a re-ingest replaces it and never appends, and a crash at
any moment leaves the old file or the new one, never both.
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable
from datetime import date
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ingest.billing import tables as billing_tables
from ingest.core.columns import I64, LINEAGE, STR, TS
from ingest.core.errors import IngestError
from ingest.core.read_ahead import prefetch
from ingest.scheduler import tables as scheduler_tables
from ingest.telemetry import tables as telemetry_tables

QUARANTINE_TABLE = "quarantine"

#: a data-health finding (the columns of fct_data_health after its run)
_FINDING: list[tuple[str, pa.DataType]] = [
    ("source", STR),
    ("day", pa.date32()),
    ("check_name", STR),
    ("severity", STR),
    ("count", I64),
    ("message", STR),
]
_TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    # the days `fleetledger run` was asked for: the hour spine (fleetledger/config_tables.py)
    "accounted_days": [
        ("day", pa.date32()),
        ("recorded_at", TS),
    ],
    # the data-health findings of each published run (fleetledger/data_health.py)
    "data_health_log": [
        ("run_at", TS),
        ("run_id", STR),
        *_FINDING,
    ],
    # every finding of each source's latest ingest, with the Dagster run that raised it
    # (ingest/core/findings_landing.py); dbt adds this run's to fct_data_health
    "ingest_findings": [
        ("run_id", STR),
        ("run_at", TS),
        *_FINDING,
    ],
    QUARANTINE_TABLE: [
        ("reason", STR),
        ("raw", STR),
    ],
}
#: the tables the pipeline itself writes (not a source kind's): dbt reads them beside the kinds'
PIPELINE_TABLES = ("accounted_days", "data_health_log", "ingest_findings", QUARANTINE_TABLE)
#: every domain's landing tables (ingest/billing/tables.py, ingest/telemetry/tables.py,
#: ingest/scheduler/tables.py); a kind registered at run time adds its own (`register_table`)
for _domain in (billing_tables.TABLES, telemetry_tables.TABLES, scheduler_tables.TABLES):
    _TABLES.update(_domain)
#: tables whose columns are the source's own (only lineage is fixed)
OPEN_TABLES = set(billing_tables.OPEN_TABLES)


def _with_lineage(cols: list[tuple[str, pa.DataType]], table: str) -> pa.Schema:
    if table == QUARANTINE_TABLE:
        return pa.schema([*LINEAGE, *cols])
    return pa.schema([*cols, *LINEAGE])


SCHEMAS: dict[str, pa.Schema] = {t: _with_lineage(c, t) for t, c in _TABLES.items()}


def unregister_table(table: str) -> None:
    """Forget a table added by `register_table` (a test's fake kind)."""
    SCHEMAS.pop(table, None)
    OPEN_TABLES.discard(table)


def register_table(
    table: str, columns: list[tuple[str, pa.DataType]], *, open_: bool = False
) -> None:
    """Add a landing table (a kind registered at run time, `ingest.kinds.register`). Registering
    the same schema again is a no-op; a different schema under a known name is an error."""
    schema = _with_lineage(columns, table)
    known = SCHEMAS.get(table)
    if known is not None and not known.equals(schema):
        raise IngestError(f"landing table {table!r} is already registered with another schema")
    SCHEMAS[table] = schema
    if open_:
        OPEN_TABLES.add(table)


def fixed_tables() -> list[str]:
    """Tables whose columns are fixed by the contract (every column of the schema is written)."""
    return [t for t in SCHEMAS if t not in OPEN_TABLES and t != QUARANTINE_TABLE]


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a landing table (for `aws_cur_lines`: the known columns only)."""
    try:
        return SCHEMAS[table]
    except KeyError:
        raise IngestError(f"unknown landing table {table!r}") from None


def _polars_type(t: pa.DataType) -> pl.DataType:
    if pa.types.is_string(t):
        return pl.String()
    if pa.types.is_float64(t):
        return pl.Float64()
    if pa.types.is_int64(t):
        return pl.Int64()
    if pa.types.is_int32(t):
        return pl.Int32()
    if pa.types.is_date32(t):
        return pl.Date()
    if pa.types.is_timestamp(t):
        return pl.Datetime(t.unit, t.tz)  # type: ignore[attr-defined]
    if pa.types.is_list(t):
        return pl.List(_polars_type(t.value_type))  # type: ignore[attr-defined]
    raise TypeError(f"no polars type for {t}")


def polars_schema(table: str) -> pl.Schema:
    """The polars schema of a landing table, for building empty frames and casting.

    (Built without pyarrow's table machinery, which imports pandas: readers stay light.)"""
    return pl.Schema({f.name: _polars_type(f.type) for f in arrow_schema(table)})


def empty_frame(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def empty_quarantine() -> pl.DataFrame:
    return empty_frame(QUARANTINE_TABLE)


_PARTITION = re.compile(r"^(date=\d{4}-\d{2}-\d{2}|period=\d{4}-\d{2})$")
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def partition_dir(home: Path, table: str, source: str, partition: str) -> Path:
    if table not in SCHEMAS:
        raise IngestError(f"unknown landing table {table!r}")
    if not _SOURCE.match(source):
        raise IngestError(f"invalid source name {source!r}")
    if not _PARTITION.match(partition):
        raise IngestError(
            f"invalid partition {partition!r} (expected date=YYYY-MM-DD or period=YYYY-MM)"
        )
    return Path(home) / "raw" / table / source / partition


def partition_day(partition: str) -> date | None:
    """The day of a `date=YYYY-MM-DD` partition (None for a `period=YYYY-MM` billing period)."""
    if partition.startswith("date="):
        return date.fromisoformat(partition.removeprefix("date="))
    return None


def landed_partitions(home: Path, table: str, source: str) -> list[str]:
    """The partitions (`date=YYYY-MM-DD`, `period=YYYY-MM`) of one source in a landing table
    that hold a landed file, sorted. A write's temporary folder (`.tmp-...`, `.old-...`) is
    never one, even when a crash left a complete file in it."""
    folder = Path(home) / "raw" / table / source
    if not folder.is_dir():
        return []
    return sorted(
        p.name
        for p in folder.iterdir()
        if p.name.startswith(("date=", "period="))
        and p.is_dir()
        and (p / "part-0.parquet").exists()
    )


def to_arrow(table: str, df: pl.DataFrame) -> pa.Table:
    """Cast a frame to the landing table's Arrow schema.

    Fixed tables: exactly the schema's columns in order (a missing column is an error; extra
    columns are an error too). `aws_cur_lines`: every column kept, the known ones cast to their
    CUR 2.0 types, lineage required.
    """
    schema = arrow_schema(table)
    if table in OPEN_TABLES:
        missing = [n for n, _ in LINEAGE if n not in df.columns]
        if missing:
            raise IngestError(f"{table}: frame lacks lineage columns {missing}")
        arrow = df.to_arrow()
        fields = []
        for f in arrow.schema:
            if f.name in schema.names:
                fields.append(pa.field(f.name, schema.field(f.name).type))
            elif pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type):
                fields.append(pa.field(f.name, STR))
            else:
                fields.append(f)
        return _cast(arrow, pa.schema(fields), table)
    return _cast(_fixed_columns(table, df, schema).to_arrow(), schema, table)


def _fixed_columns(table: str, df: pl.DataFrame, schema: pa.Schema) -> pl.DataFrame:
    """`df`'s columns in the fixed table's order: a missing or an extra column is an error."""
    missing = [n for n in schema.names if n not in df.columns]
    extra = [c for c in df.columns if c not in schema.names]
    if missing or extra:
        raise IngestError(
            f"{table}: frame does not match the schema: missing {missing}, extra {extra}"
        )
    return df.select(schema.names)


def streamed_schema(table: str) -> pa.Schema:
    """The Arrow schema `land_frames` writes a fixed table's batches in: the landing schema with
    every text column as `string_view`, the layout Polars holds text in, so a frame converts
    without copying its strings (at 1,024 GPUs a day of long DCGM samples, 14.7 M rows, lands
    with about 1 s less CPU and 0.8 s sooner: the copies went, the writer takes a little longer
    over `string_view`, docs/landing.md). The
    file is written without the Arrow schema (`store_schema=False`): Parquet stores text the
    same way whichever Arrow type it came from, so every reader sees plain strings, exactly as
    in a file `land` writes."""
    return pa.schema(
        [
            pa.field(f.name, pa.string_view(), f.nullable) if pa.types.is_string(f.type) else f
            for f in arrow_schema(table)
        ]
    )


def to_streamed_arrow(table: str, df: pl.DataFrame) -> pa.Table:
    """`to_arrow` for `land_frames`: a fixed table's columns in `streamed_schema`."""
    schema = streamed_schema(table)
    arrow = _fixed_columns(table, df, schema).to_arrow(compat_level=pl.CompatLevel.newest())
    return _cast(arrow, schema, table)


def _cast(arrow: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
    try:
        return arrow.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise IngestError(f"{table}: cannot cast to the landing schema: {err}") from None


def parquet_options(schema: pa.Schema) -> dict[str, object]:
    """How a landing file is written: zstd; 64-bit integer and timestamp columns (sample times,
    `x_line_number`) delta-encoded and float columns plain, without the dictionary pyarrow would
    first try on every column. Those columns hold nearly as many distinct values as rows, so the
    dictionary was built, abandoned and the values compressed as they are: at 1,024 GPUs a day
    of long DCGM samples (14.7 M rows) wrote 50 MB in 4.6 s this way and writes 2.4 MB in 3.3 s
    delta-encoded, which DuckDB also scans in about half the time (docs/landing.md). Strings and
    small integers keep their dictionary (hosts, metrics, GPU indexes repeat).

    Every column keeps its min/max and null-count statistics, text included. Leaving the text
    columns' out saves about a tenth of a DCGM day's landing CPU, but DuckDB plans the staging
    view's join (int_dcgm_samples: the host labels) with them: without, `int_dcgm_host_days`
    took 1.7 s a day of 1,024 GPUs instead of 1.1, and the other models reading the landed
    samples 5-10 % longer (docs/landing.md)."""
    delta = [f.name for f in schema if pa.types.is_int64(f.type) or pa.types.is_timestamp(f.type)]
    plain = {*delta, *(f.name for f in schema if pa.types.is_floating(f.type))}
    return {
        "compression": "zstd",
        "use_dictionary": [f.name for f in schema if f.name not in plain],
        "column_encoding": dict.fromkeys(delta, "DELTA_BINARY_PACKED"),
    }


def _cleanup_leftovers(parent: Path, partition: str) -> None:
    """Remove what a crashed write of `partition` left beside it: its unfinished file, and the
    `.tmp-` / `.old-` folders of the earlier way of writing (see `recover_crashed_writes`)."""
    if not parent.exists():
        return
    for p in parent.iterdir():
        if p.name.startswith(f".{partition}.") and p.name.endswith(".partial"):
            p.unlink(missing_ok=True)
        elif p.name.startswith((f".tmp-{partition}-", f".old-{partition}-")):
            shutil.rmtree(p, ignore_errors=True)


def recover_crashed_writes(home: Path, source: str = "*") -> list[str]:
    """Settle the folders an earlier version's write left when it crashed, and say what was done.

    Until 2026-12, a partition was written into a folder `.tmp-<partition>-<token>` and swapped
    in with `.old-<partition>-<token>` holding the previous one for a moment. A crash between
    those renames left a complete `part-0.parquet` in a hidden folder, which DuckDB's
    `**/*.parquet` glob reads as well: the day's rows would count twice until the partition was
    landed again. The partition itself is the truth when it exists (the swap had not happened,
    or had finished): the leftovers go. When it is missing (the crash fell between moving the
    old partition aside and moving the new one in), the new one, already complete and admitted,
    is moved in. Writes no longer leave such folders (`_write_partition`). `source`: one
    source's partitions in every landing table (default: every source's)."""
    done: list[str] = []
    raw = Path(home) / "raw"
    if not raw.is_dir():
        return done
    leftovers = [
        p
        for kind in (".tmp-", ".old-")  # a `.tmp-` (the new partition) settles first
        for shape in ("date=", "period=")
        for p in sorted(raw.glob(f"*/{source}/{kind}{shape}*"))
    ]
    for leftover in leftovers:
        if not leftover.is_dir():
            continue
        partition = leftover.name[5:].rsplit("-", 1)[0]
        target = leftover.parent / partition
        where = f"{leftover.parent.parent.name}/{leftover.parent.name}/{partition}"
        if not target.exists() and (leftover / "part-0.parquet").exists():
            # the new partition (`.tmp-`, settled first) or else the old one (`.old-`)
            try:
                os.replace(leftover, target)
                done.append(f"{where}: moved back in from a crashed write's {leftover.name}")
                continue
            except FileNotFoundError:
                continue  # settled meanwhile by a step running beside this one
            except OSError as err:
                if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
                    raise
                # a step beside this one landed the partition meanwhile: it is the truth
        if leftover.exists():
            shutil.rmtree(leftover, ignore_errors=True)
            done.append(f"{where}: a crashed write's leftover folder {leftover.name} removed")
    return done


def _write_partition(
    target: Path,
    arrow: pa.Table | None,
    batches: Iterable[pa.Table] = (),
    table: str = "",
    admit: Callable[[int], bool] | None = None,
) -> tuple[Path, int]:
    """Write one table (or a stream of tables with one schema, as row groups) under a hidden
    temporary name beside `target`, then rename it over `target/part-0.parquet` — unless
    `admit(rows written)` says no, in which case the written file is discarded and `target`
    stays as it was. Returns the file and the rows written."""
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _cleanup_leftovers(parent, target.name)
    # hidden and not ending in .parquet until it is renamed into place: a crashed write leaves
    # nothing a `**/*.parquet` glob (DuckDB's, which also enters hidden folders) or Spark's
    # listing (which skips hidden names) would read
    partial = parent / f".{target.name}.{uuid.uuid4().hex[:12]}.partial"
    rows = 0
    try:
        if arrow is not None:
            pq.write_table(arrow, partial, **parquet_options(arrow.schema))
            rows = arrow.num_rows
        else:
            schema = streamed_schema(table)
            with pq.ParquetWriter(
                partial, schema, store_schema=False, **parquet_options(schema)
            ) as writer:
                for batch in batches:
                    if batch.num_rows:
                        writer.write_table(batch)
                        rows += batch.num_rows
        if admit is not None and not admit(rows):
            partial.unlink(missing_ok=True)
            return target / "part-0.parquet", rows
        target.mkdir(exist_ok=True)
        # one atomic rename: a reader sees the old file or the new one, never both or neither
        os.replace(partial, target / "part-0.parquet")
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    # a partition holds its one file: anything else in it was left by an older layout
    for p in target.iterdir():
        if p.name != "part-0.parquet":
            if p.is_dir():
                shutil.rmtree(p, ignore_errors=True)
            else:
                p.unlink(missing_ok=True)
    return target / "part-0.parquet", rows


def replace_file(folder: Path, arrow: pa.Table) -> Path:
    """Write `arrow` as `folder/part-0.parquet` the way every partition is written (a hidden
    `.partial` beside the folder, one rename), for a folder outside the partition layout: the
    config tables' `raw/config_<name>/config/current/`. Returns the file written."""
    return _write_partition(folder, arrow)[0]


def land(home: Path, table: str, source: str, partition: str, df: pl.DataFrame) -> Path:
    """Write `df` as `home/raw/<table>/<source>/<partition>/part-0.parquet`, replacing the
    partition whole. Returns the file written."""
    target = partition_dir(home, table, source, partition)
    return _write_partition(target, to_arrow(table, df))[0]


def land_frames(
    home: Path,
    table: str,
    source: str,
    partition: str,
    frames: Iterable[pl.DataFrame],
    *,
    admit: Callable[[int], bool] | None = None,
) -> tuple[Path, int]:
    """Like `land`, for a partition too large to hold at once: each frame (e.g. one source
    file) is written as it comes, as row groups of one file. If the iterable raises, nothing
    is landed and the old partition stays; so does it when `admit(rows)`, asked once every
    frame is written, returns False (a landing guard, ingest/core/guards.py). Fixed-schema
    tables only. Returns (file, rows written)."""
    if table not in fixed_tables():
        raise IngestError(f"land_frames: {table} has no fixed schema")
    target = partition_dir(home, table, source, partition)
    # the frames (parsed ahead on reader threads, ingest/core/read_ahead.py) are converted on
    # a thread of their own while this one compresses and writes the previous file's
    batches = prefetch(to_streamed_arrow(table, df) for df in frames)
    try:
        return _write_partition(target, None, batches, table=table, admit=admit)
    finally:
        batches.close()  # a failed write stops the readers now, not when its traceback goes


def land_record(
    home: Path, table: str, source: str, partition: str, name: str, df: pl.DataFrame
) -> Path:
    """Write `df` as `home/raw/<table>/<source>/<partition>/<name>.parquet` beside the other
    records of the partition (for append-only tables such as `aws_cur_deliveries`): the file is
    written under a temporary name and renamed, so a record is whole or absent, and writing the
    same `name` again replaces it (re-runs never duplicate). Returns the file written."""
    if not _SOURCE.match(name):
        raise IngestError(f"invalid record name {name!r}")
    target = partition_dir(home, table, source, partition) / f"{name}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{name}.{uuid.uuid4().hex[:12]}.partial"
    try:
        arrow = to_arrow(table, df)
        pq.write_table(arrow, tmp, **parquet_options(arrow.schema))
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def land_quarantine(home: Path, source: str, partition: str, df: pl.DataFrame) -> Path | None:
    """Replace the quarantine partition of a source with `df` (columns x_source, x_source_file,
    x_line_number, reason, raw). An empty frame removes the partition (nothing rejected now);
    returns the file written or None."""
    target = partition_dir(home, QUARANTINE_TABLE, source, partition)
    if df.height == 0:
        if target.exists():
            _cleanup_leftovers(target.parent, partition)
            # the file goes first, so a crash leaves no copy of it anywhere a glob reads
            (target / "part-0.parquet").unlink(missing_ok=True)
            shutil.rmtree(target, ignore_errors=True)
        return None
    return _write_partition(target, to_arrow(QUARANTINE_TABLE, df))[0]


def write_schema_files(home: Path) -> list[Path]:
    """Write `raw/<table>/_schema/part-0.parquet` (an empty file with the table's schema) for
    every landing table, so dbt can read a table that no configured source fills."""
    written = []
    for table, schema in SCHEMAS.items():
        d = Path(home) / "raw" / table / "_schema"
        if _has_schema(d / "part-0.parquet", schema):
            written.append(d / "part-0.parquet")
            continue  # every ingest writes them: an unchanged one is not written again
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".part-0.parquet.{uuid.uuid4().hex[:8]}.partial"
        pq.write_table(pa.table([pa.array([], type=f.type) for f in schema], schema=schema), tmp)
        os.replace(tmp, d / "part-0.parquet")
        written.append(d / "part-0.parquet")
    return written


def _has_schema(path: Path, schema: pa.Schema) -> bool:
    """Whether `path` is an empty Parquet file of exactly `schema`."""
    try:
        meta = pq.read_metadata(path)
    except (OSError, pa.ArrowInvalid):
        return False
    return meta.num_rows == 0 and meta.schema.to_arrow_schema().equals(schema)
