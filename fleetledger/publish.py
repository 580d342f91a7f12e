"""Publish the warehouse the pipeline built as the read-only snapshot the app and notebooks read.

dbt writes `$FLEETLEDGER_HOME/build/warehouse.duckdb`; DuckDB lets one process write a file and
locks readers out of it meanwhile. Consumers therefore read `$FLEETLEDGER_HOME/warehouse.duckdb`,
which is replaced atomically (copy to a temp file beside it, then `os.replace`), so a reader sees
either the old snapshot or the new one, never a half-written file, and keeps working during a run.

The day models (macros/incremental.sql: every sample of every day, nearly all of the bytes) live
in a file of their own, `build/history.duckdb`, attached to the build as database `history`
(dbt_project/profiles.yml). Publishing copies the build warehouse only, so it copies no sample
history however long the history grows; `connect_build` opens the build with the history
attached, for a look at the day models between runs.

On Spark (config `warehouse.engine: spark`, docs/scaling.md) the marts stay Parquet tables of the
Spark warehouse; `export_spark_warehouse` copies its mart and intermediate tables into
`build/warehouse.duckdb` right after the dbt build, so the forecast, alert and publish steps and
every consumer work on the same DuckDB snapshot whichever engine built it.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

BUILD_WAREHOUSE = Path("build") / "warehouse.duckdb"
#: the Spark databases exported to DuckDB: the marts and the intermediate tables the alert
#: rules read (staging models are views over the landing zone: no data of their own)
SPARK_EXPORTED_SCHEMAS = ("main", "intermediate")
#: the day models' own file, attached to the build warehouse under `HISTORY_DATABASE`
HISTORY_WAREHOUSE = Path("build") / "history.duckdb"
#: the name profiles.yml attaches it under (the dbt macro `history_database`)
HISTORY_DATABASE = "history"
PUBLISHED_WAREHOUSE = Path("warehouse.duckdb")
#: what the last publish copied: the build file and the snapshot as they were (size, mtime, inode)
PUBLISHED_STAMP = Path("build") / "published_stamp.json"


class PublishError(RuntimeError):
    """The built warehouse is missing or unreadable."""


@dataclass(frozen=True)
class PublishResult:
    path: Path
    size_bytes: int
    row_counts: dict[str, int] = field(default_factory=dict)


def build_path(home: Path) -> Path:
    return home / BUILD_WAREHOUSE


def history_path(home: Path) -> Path:
    return home / HISTORY_WAREHOUSE


def connect_build(home: Path, read_only: bool = True) -> duckdb.DuckDBPyConnection:
    """The build warehouse with the day models' file attached as `history` (when there is
    one): a day model reads as `history.intermediate.<model>`, everything else as before."""
    con = duckdb.connect(str(build_path(home)), read_only=read_only)
    history = history_path(home)
    if history.exists():
        mode = " (read_only)" if read_only else ""
        quoted = str(history).replace("'", "''")
        con.execute(f"attach '{quoted}' as {HISTORY_DATABASE}{mode}")
    return con


def published_path(home: Path) -> Path:
    return home / PUBLISHED_WAREHOUSE


def file_stamp(path: Path) -> list[int]:
    """Size, modification time (ns) and inode of a file: any write or replacement changes it."""
    st = path.stat()
    return [st.st_size, st.st_mtime_ns, st.st_ino]


def _record_published(home: Path, src: Path, dst: Path) -> None:
    stamp = home / PUBLISHED_STAMP
    tmp = stamp.with_name(f".{stamp.name}.tmp")
    tmp.write_text(json.dumps({"build": file_stamp(src), "published": file_stamp(dst)}))
    tmp.replace(stamp)


def build_is_published(home: Path) -> bool:
    """True when the build warehouse is still the file the last publish copied, byte for byte,
    and the snapshot is still that copy: then the snapshot can stand in for a copy of the build
    (fleetledger/incremental.py puts it back when a build fails)."""
    src, dst = build_path(home), published_path(home)
    try:
        stamp = json.loads((home / PUBLISHED_STAMP).read_text())
        if Path(f"{src}.wal").exists():
            return False
        return stamp == {"build": file_stamp(src), "published": file_stamp(dst)}
    except (FileNotFoundError, json.JSONDecodeError):
        return False


def published_is_unchanged(home: Path, stamp: list[int]) -> bool:
    try:
        return file_stamp(published_path(home)) == stamp
    except FileNotFoundError:
        return False


def checkpoint(path: Path) -> None:
    """Fold a leftover write-ahead log into the database file so the copy is complete."""
    if not Path(f"{path}.wal").exists():
        return
    con = duckdb.connect(str(path))
    try:
        con.execute("CHECKPOINT")
    finally:
        con.close()


def _row_counts(path: Path) -> dict[str, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        tables = [
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables "
                "where table_schema = 'main' and (table_name like 'fct\\_%' escape '\\' "
                "or table_name like 'dim\\_%' escape '\\') order by table_name"
            ).fetchall()
        ]
        counts: dict[str, int] = {}
        for table in tables:
            row = con.execute(f'select count(*) from main."{table}"').fetchone()
            counts[table] = int(row[0]) if row else 0
        return counts
    finally:
        con.close()


def publish_warehouse(home: Path) -> PublishResult:
    """Copy `build/warehouse.duckdb` over `warehouse.duckdb` atomically; returns the mart sizes."""
    src = build_path(home)
    dst = published_path(home)
    if not src.exists():
        raise PublishError(f"{src}: no built warehouse to publish (did the dbt build run?)")
    try:
        checkpoint(src)
    except duckdb.Error as err:
        raise PublishError(f"{src}: cannot checkpoint the built warehouse: {err}") from err
    dst.parent.mkdir(parents=True, exist_ok=True)
    (home / PUBLISHED_STAMP).unlink(missing_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".warehouse.", suffix=".duckdb.tmp", dir=dst.parent)
    tmp = Path(tmp_name)
    try:
        os.close(fd)
        # the kernel's copy (copy_file_range / sendfile; a reflink where the file system has
        # them): about 9x faster than copying through Python buffers (docs/performance-history.md)
        shutil.copyfile(src, tmp)
        with tmp.open("rb+") as out:
            os.fsync(out.fileno())
        try:
            counts = _row_counts(tmp)
        except duckdb.Error as err:
            raise PublishError(f"{src}: the built warehouse is not readable: {err}") from err
        os.replace(tmp, dst)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    # a WAL beside the published file belongs to the file it replaced
    Path(f"{dst}.wal").unlink(missing_ok=True)
    _record_published(home, src, dst)
    return PublishResult(path=dst, size_bytes=dst.stat().st_size, row_counts=counts)


def _spark_tables(warehouse_dir: Path, schema: str) -> list[Path]:
    """The table folders of a Spark database in a local warehouse (`<dir>/<schema>.db/<t>/`)."""
    root = warehouse_dir / f"{schema}.db"
    if not root.is_dir():
        return []
    return sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith((".", "_")))


def export_spark_warehouse(home: Path, warehouse_dir: Path) -> dict[str, int]:
    """Write `build/warehouse.duckdb` from the Parquet tables a Spark build wrote under
    `warehouse_dir` (schemas `SPARK_EXPORTED_SCHEMAS`, one DuckDB table per Spark table, columns
    and types as the Parquet files hold them); the file is written beside and swapped in whole.
    Returns the rows per `schema.table`. PublishError when the Spark build wrote no mart."""
    marts = _spark_tables(warehouse_dir, "main")
    if not marts:
        raise PublishError(
            f"{warehouse_dir}: no Spark mart tables to export (did the dbt build on Spark run?)"
        )
    dst = build_path(home)
    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = dst.with_name(f".{dst.name}.export")
    tmp.unlink(missing_ok=True)
    counts: dict[str, int] = {}
    try:
        _export_tables(tmp, warehouse_dir, counts)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, dst)
    Path(f"{dst}.wal").unlink(missing_ok=True)
    return counts


def _export_tables(path: Path, warehouse_dir: Path, counts: dict[str, int]) -> None:
    con = duckdb.connect(str(path))
    try:
        for schema in SPARK_EXPORTED_SCHEMAS:
            con.execute(f'create schema if not exists "{schema}"')
            for table in _spark_tables(warehouse_dir, schema):
                files = sorted(str(f) for f in table.rglob("[!._]*.parquet"))
                if not files:
                    # a partitioned table with no row: the empty file with its schema that
                    # the build wrote beside it (macros/incremental.sql, spark_schema_file)
                    schema_dir = table.parent / "_schemas" / table.name
                    files = sorted(str(f) for f in schema_dir.glob("[!._]*.parquet"))
                if not files:
                    raise PublishError(f"{table}: a Spark table without a Parquet file")
                name = f'"{schema}"."{table.name}"'
                con.execute(f"create table {name} as select * from read_parquet(?)", [files])
                row = con.execute(f"select count(*) from {name}").fetchone()
                counts[f"{schema}.{table.name}"] = int(row[0]) if row else 0
        con.execute("checkpoint")
    except duckdb.Error as err:
        raise PublishError(f"{warehouse_dir}: cannot export the Spark tables: {err}") from err
    finally:
        con.close()
