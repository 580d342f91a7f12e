from __future__ import annotations

import shutil
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.billing.tables import CUR_COLUMNS
from ingest.core.errors import IngestError
from ingest.core.landing import (
    SCHEMAS,
    empty_frame,
    fixed_tables,
    land,
    land_frames,
    land_quarantine,
    landed_partitions,
    partition_day,
    polars_schema,
    recover_crashed_writes,
    write_schema_files,
)


def power_rows(n: int, source: str = "p") -> pl.DataFrame:
    return pl.DataFrame(
        {
            "time": [datetime(2026, 11, 2, 0, i, tzinfo=UTC) for i in range(n)],
            "site": ["dc1"] * n,
            "meter": ["m"] * n,
            "kind": ["it"] * n,
            "kw": [1.0] * n,
            "x_source": [source] * n,
            "x_source_file": ["f.csv"] * n,
            "x_line_number": list(range(2, n + 2)),
        },
        schema=polars_schema("power_readings"),
    )


def test_land_replaces_partition_whole(tmp_path: Path) -> None:
    p = land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(5))
    assert p == tmp_path / "raw/power_readings/p/date=2026-11-02/part-0.parquet"
    assert pq.read_table(p).num_rows == 5
    land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(3))
    files = sorted((tmp_path / "raw/power_readings/p").rglob("*"))
    assert [f.relative_to(tmp_path).as_posix() for f in files] == [
        "raw/power_readings/p/date=2026-11-02",
        "raw/power_readings/p/date=2026-11-02/part-0.parquet",
    ]
    t = pq.read_table(p)
    assert t.num_rows == 3
    assert t.schema == SCHEMAS["power_readings"]
    assert t.schema.field("time").type == pa.timestamp("us", tz="UTC")


def test_land_validates(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="invalid partition"):
        land(tmp_path, "power_readings", "p", "2026-11-02", power_rows(1))
    with pytest.raises(IngestError, match="unknown landing table"):
        land(tmp_path, "nope", "p", "date=2026-11-02", power_rows(1))
    with pytest.raises(IngestError, match="missing \\['kw'\\]"):
        land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(1).drop("kw"))
    # a failed write leaves nothing behind
    assert not (tmp_path / "raw/power_readings/p").exists() or not any(
        (tmp_path / "raw/power_readings/p").iterdir()
    )


def test_open_table_keeps_columns(tmp_path: Path) -> None:
    df = pl.DataFrame(
        {
            "line_item_unblended_cost": [1.5],
            "brand_new_column": ["x"],
            "x_source": ["aws"],
            "x_source_file": ["f"],
            "x_line_number": [1],
        }
    )
    p = land(tmp_path, "aws_cur_lines", "aws", "period=2026-10", df)
    t = pq.read_table(p)
    assert t.column_names == df.columns
    assert t.schema.field("brand_new_column").type == pa.string()
    with pytest.raises(IngestError, match="lineage"):
        land(tmp_path, "aws_cur_lines", "aws", "period=2026-10", df.drop("x_source"))


def test_quarantine_and_schema_files(tmp_path: Path) -> None:
    q = pl.DataFrame(
        {
            "x_source": ["p"],
            "x_source_file": ["f.csv"],
            "x_line_number": [7],
            "reason": ["kw is negative"],
            "raw": ["2026-11-02T00:00:00Z,dc1,m,it,-1"],
        }
    )
    p = land_quarantine(tmp_path, "p", "date=2026-11-02", q)
    assert p == tmp_path / "raw/quarantine/p/date=2026-11-02/part-0.parquet"
    assert pq.read_table(p).column_names == [
        "x_source",
        "x_source_file",
        "x_line_number",
        "reason",
        "raw",
    ]
    assert land_quarantine(tmp_path, "p", "date=2026-11-02", empty_frame("quarantine")) is None
    assert not p.parent.exists()

    written = write_schema_files(tmp_path)
    assert len(written) == len(SCHEMAS)
    assert {"aws_cur_lines", "aws_cur_deliveries", "quarantine"} <= set(SCHEMAS)
    con = duckdb.connect()
    for table in fixed_tables():
        f = tmp_path / "raw" / table / "_schema" / "part-0.parquet"
        assert pq.read_table(f).schema == SCHEMAS[table]
        assert con.sql(f"select count(*) from read_parquet('{f}')").fetchall()[0] == (0,)
    cur = pq.read_table(tmp_path / "raw/aws_cur_lines/_schema/part-0.parquet").schema
    assert [n for n, _ in CUR_COLUMNS] + ["x_source", "x_source_file", "x_line_number"] == cur.names
    assert cur.field("line_item_usage_start_date").type == pa.timestamp("us", tz="UTC")
    assert cur.field("line_item_unblended_cost").type == pa.float64()
    assert cur.field("resource_tags").type == pa.string()
    # dbt reads a table with the schema file and real partitions together
    land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(4))
    got = con.sql(
        f"select count(*), max(kw) from read_parquet('{tmp_path}/raw/power_readings/**/*.parquet',"
        " union_by_name=true)"
    ).fetchall()[0]
    assert got == (4, 1.0)


def test_land_frames_streams_row_groups(tmp_path: Path) -> None:
    path, n = land_frames(
        tmp_path, "power_readings", "p", "date=2026-11-02", iter([power_rows(2), power_rows(3)])
    )
    assert n == 5
    f = pq.ParquetFile(path)
    assert (f.metadata.num_rows, f.metadata.num_row_groups) == (5, 2)
    assert f.schema_arrow == SCHEMAS["power_readings"]

    def failing():
        yield power_rows(1)
        raise IngestError("bad file", file="x.csv", line=3)

    with pytest.raises(IngestError, match="x.csv, line 3: bad file"):
        land_frames(tmp_path, "power_readings", "p", "date=2026-11-02", failing())
    # the old partition is still there, and no temporary folder is left behind
    assert pq.read_table(path).num_rows == 5
    assert [p.name for p in (tmp_path / "raw/power_readings/p").iterdir()] == ["date=2026-11-02"]
    _, n = land_frames(tmp_path, "power_readings", "p", "date=2026-11-03", iter([]))
    assert n == 0
    assert (
        pq.read_table(tmp_path / "raw/power_readings/p/date=2026-11-03/part-0.parquet").num_rows
        == 0
    )


def test_delta_encoded_columns_read_back_unchanged(tmp_path: Path) -> None:
    """Times and line numbers are landed delta-encoded, floats plain, every column with min/max
    statistics (docs/landing.md): values
    that are out of order, negative, extreme, null or NaN read back exactly, by DuckDB (dbt)
    and polars (the quality checks), and an empty partition still lands."""
    times = [
        datetime(2026, 11, 2, 0, 5, tzinfo=UTC),
        None,
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2262, 1, 1, tzinfo=UTC),
        datetime(2026, 11, 2, 0, 1, tzinfo=UTC),
    ]
    lines = [7, None, -5, 2**63 - 1, -(2**63)]
    kw = [float("nan"), None, float("inf"), -0.0, 1e308]
    frame = pl.DataFrame(
        {
            "time": times,
            "site": ["dc1"] * 5,
            "meter": ["m"] * 5,
            "kind": ["it"] * 5,
            "kw": kw,
            "x_source": ["p"] * 5,
            "x_source_file": ["f.csv"] * 5,
            "x_line_number": lines,
        },
        schema=polars_schema("power_readings"),
    )
    path, n = land_frames(tmp_path, "power_readings", "p", "date=2026-11-02", iter([frame]))
    assert n == 5
    chunk = pq.ParquetFile(path).metadata.row_group(0)
    encodings = {chunk.column(i).path_in_schema: chunk.column(i).encodings for i in range(8)}
    assert "DELTA_BINARY_PACKED" in encodings["time"]
    assert "DELTA_BINARY_PACKED" in encodings["x_line_number"]
    assert "RLE_DICTIONARY" in encodings["site"]
    # min/max for every column: the times (what a day's filter prunes row groups by), and the
    # text too (DuckDB plans the staging views' joins by them: docs/landing.md)
    stats = {chunk.column(i).path_in_schema: chunk.column(i).statistics for i in range(8)}
    assert stats["time"] is not None and stats["time"].has_min_max
    assert (stats["time"].min, stats["time"].max) == (times[2], times[3])
    assert stats["x_line_number"].has_min_max and stats["kw"].has_min_max
    assert all(stats[c].has_min_max for c in ("site", "meter", "kind", "x_source"))

    back = pl.read_parquet(path)
    assert back["time"].to_list() == times
    assert back["x_line_number"].to_list() == lines
    got = back["kw"].to_list()
    assert got[0] != got[0] and got[1:] == kw[1:]  # NaN, then the rest as written
    rows = duckdb.sql(
        f"select epoch_us(time), x_line_number, kw from read_parquet('{path}')"
    ).fetchall()
    epoch = datetime(1970, 1, 1, tzinfo=UTC)
    assert [r[0] for r in rows] == [
        None if t is None else int((t - epoch).total_seconds()) * 1_000_000 for t in times
    ]
    assert [r[1] for r in rows] == lines
    assert [r[2] for r in rows][1:] == kw[1:]

    empty, n = land_frames(tmp_path, "power_readings", "p", "date=2026-11-03", iter([frame[:0]]))
    assert n == 0 and pl.read_parquet(empty).height == 0


def test_landed_partitions_are_the_folders_holding_a_landed_file(tmp_path: Path) -> None:
    """What the landing checks, the day batches and the recomputed-day logic list as landed: a
    `date=`/`period=` folder with its `part-0.parquet`, never a write's temporary folder (a
    crash between its two renames leaves a complete file there) or an empty folder."""
    land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(2))
    land(tmp_path, "power_readings", "p", "date=2026-11-01", power_rows(1))
    source = tmp_path / "raw" / "power_readings" / "p"
    crashed = source / ".tmp-date=2026-11-03-0123456789ab"
    crashed.mkdir()
    shutil.copy(source / "date=2026-11-02" / "part-0.parquet", crashed / "part-0.parquet")
    (source / "date=2026-11-04").mkdir()
    assert landed_partitions(tmp_path, "power_readings", "p") == [
        "date=2026-11-01",
        "date=2026-11-02",
    ]
    assert landed_partitions(tmp_path, "power_readings", "other") == []
    assert [partition_day(p) for p in ("date=2026-11-02", "period=2026-11")] == [
        datetime(2026, 11, 2).date(),
        None,
    ]


def _glob_rows(home: Path, table: str) -> int:
    """What every dbt build reads of a landing table on DuckDB (its `external_location`)."""
    return duckdb.sql(
        f"select count(*) from read_parquet('{home}/raw/{table}/**/*.parquet', union_by_name=true)"
    ).fetchall()[0][0]


@pytest.mark.parametrize("crash_at", ["rename", "write"])
def test_a_write_killed_midway_leaves_the_old_partition_alone(
    tmp_path: Path, crash_at: str
) -> None:
    """The process dies (no `finally`, no cleanup) while re-landing a partition of 5 rows with
    3: at the rename that would put the new file in place, or inside the Parquet write.
    DuckDB's `**` glob, which also enters hidden folders and reads hidden files, must see the
    5 old rows, never 5 + 3. (The earlier way of writing kept the complete new file in a hidden
    `.tmp-` folder until the swap: this test read 8 rows then.) The next write of the
    partition clears what the crash left."""
    land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(5))
    code = f"""
import os, sys
sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
from pathlib import Path
import pyarrow.parquet as pq
import ingest.core.landing as landing
from tests.ingest.test_ingest_landing import power_rows
real_replace = os.replace
def replace(src, dst):
    # dies at the rename that would make the new rows the partition's: the last step
    if "date=2026-11-02" in (Path(dst).name, Path(dst).parent.name):
        os._exit(3)
    real_replace(src, dst)
if {crash_at!r} == "rename":
    landing.os.replace = replace
else:
    real = pq.write_table
    def half(table, where, **kw):
        real(table, where, **kw)
        os._exit(3)
    landing.pq.write_table = half
landing.land(Path({str(tmp_path)!r}), "power_readings", "p", "date=2026-11-02", power_rows(3))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 3, done.stderr
    assert _glob_rows(tmp_path, "power_readings") == 5
    left = [p.name for p in (tmp_path / "raw/power_readings/p").iterdir()]
    assert any(n.startswith(".date=2026-11-02.") and n.endswith(".partial") for n in left)
    land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(3))
    assert sorted(p.name for p in (tmp_path / "raw/power_readings/p").iterdir()) == [
        "date=2026-11-02"
    ]
    assert _glob_rows(tmp_path, "power_readings") == 3


def test_recover_crashed_writes_of_the_earlier_layout(tmp_path: Path) -> None:
    """Folders the earlier way of writing left after a crash, each with a complete file that
    DuckDB's glob would read as well (so a day counted twice): where the partition exists it is
    the truth and the leftovers go; where the crash fell between moving the old partition aside
    and the new one in (the partition missing), the new one is moved in and the old one goes."""
    land(tmp_path, "power_readings", "p", "date=2026-11-01", power_rows(5))
    land(tmp_path, "power_readings", "p", "date=2026-11-02", power_rows(2))
    source = tmp_path / "raw/power_readings/p"
    one, two = source / "date=2026-11-01/part-0.parquet", source / "date=2026-11-02/part-0.parquet"
    for leftover, copy_of in (
        (".tmp-date=2026-11-01-aaaaaaaaaaaa", two),  # 2 rows beside the landed 5: not swapped
        (".tmp-date=2026-11-03-bbbbbbbbbbbb", two),  # the new day 3 (2 rows), not yet in
        (".old-date=2026-11-03-bbbbbbbbbbbb", one),  # day 3's old partition (5 rows), aside
    ):
        (source / leftover).mkdir()
        shutil.copy(copy_of, source / leftover / "part-0.parquet")
    assert _glob_rows(tmp_path, "power_readings") == 5 + 2 + 2 + 2 + 5
    assert recover_crashed_writes(tmp_path, "other") == []
    settled = recover_crashed_writes(tmp_path)
    assert settled == [
        "power_readings/p/date=2026-11-01: a crashed write's leftover folder "
        ".tmp-date=2026-11-01-aaaaaaaaaaaa removed",
        "power_readings/p/date=2026-11-03: moved back in from a crashed write's "
        ".tmp-date=2026-11-03-bbbbbbbbbbbb",
        "power_readings/p/date=2026-11-03: a crashed write's leftover folder "
        ".old-date=2026-11-03-bbbbbbbbbbbb removed",
    ]
    assert sorted(p.name for p in source.iterdir()) == [
        "date=2026-11-01",
        "date=2026-11-02",
        "date=2026-11-03",
    ]
    assert _glob_rows(tmp_path, "power_readings") == 5 + 2 + 2
    assert recover_crashed_writes(tmp_path) == []
