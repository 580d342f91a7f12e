"""Publish the warehouse the pipeline built as the read-only snapshot the app and notebooks read.

dbt writes `$FLEETLEDGER_HOME/build/warehouse.duckdb`; DuckDB lets one process write a file and
locks readers out of it meanwhile. Consumers therefore read `$FLEETLEDGER_HOME/warehouse.duckdb`,
which is replaced atomically (copy to a temp file beside it, then `os.replace`), so a reader sees
either the old snapshot or the new one, never a half-written file, and keeps working during a run.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

BUILD_WAREHOUSE = Path("build") / "warehouse.duckdb"
PUBLISHED_WAREHOUSE = Path("warehouse.duckdb")


class PublishError(RuntimeError):
    """The built warehouse is missing or unreadable."""


@dataclass(frozen=True)
class PublishResult:
    path: Path
    size_bytes: int
    row_counts: dict[str, int] = field(default_factory=dict)


def build_path(home: Path) -> Path:
    return home / BUILD_WAREHOUSE


def published_path(home: Path) -> Path:
    return home / PUBLISHED_WAREHOUSE


def _checkpoint(path: Path) -> None:
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
        _checkpoint(src)
    except duckdb.Error as err:
        raise PublishError(f"{src}: cannot checkpoint the built warehouse: {err}") from err
    dst.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=".warehouse.", suffix=".duckdb.tmp", dir=dst.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as out, src.open("rb") as inp:
            shutil.copyfileobj(inp, out, length=16 * 1024 * 1024)
            out.flush()
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
    return PublishResult(path=dst, size_bytes=dst.stat().st_size, row_counts=counts)
