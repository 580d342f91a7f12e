"""Dagster's sqlite event log, keeping one connection per database file instead of a new
SQLAlchemy engine for every read and write.

Dagster's `SqliteEventLogStorage` builds an engine (and so a new sqlite connection, with
SQLAlchemy's first-connect checks) on each access, so that processes forked mid-run never share
a connection. A `fleetledger run` records some 1,000 events (a materialisation per model, a check
result per dbt test, logs) with three or four accesses each; the engines alone cost it about
10 s on two cores. This storage reads and writes the same files with the same schema — the
Dagster UI on the same instance directory reads them with its default storage — but keeps one
engine per database file and process (an engine made in another process is never reused).
It is what `fleetledger.dagster_home.run_instance` gives the runs of a home.

Two more costs of each stored event, which grow with a run's partitions (a full build of H days
stores about 2 x 157 x H asset events: 28,000 for 90 days):
- before each asset-event tag or asset-check row, Dagster asks whether the index table exists,
  through a new engine each time (about 0.6 ms), and before each asset event's index row it
  inspects the asset keys table's columns; a table or column found once is remembered (they
  are only ever added, by a schema migration, which starts a new process);
- Dagster hands over some events in batches when `DAGSTER_EVENT_BATCH_SIZE` is set (as
  `fleetledger run` sets it, fleetledger/pipeline.py): the "planned" events of a run's start
  and the materialisations of one output's partitions (a dbt model's days). Dagster's sqlite
  storage stores them one by one all the same; this one stores a batch in one transaction per
  database file, all or nothing (Dagster then falls back to one by one);
- every event is its own transaction, and sqlite's default `synchronous=FULL` syncs the
  rollback journal and the file at each commit; the connections here use `synchronous=NORMAL`,
  which syncs less often: a crash of the process loses nothing committed, a power failure at
  the wrong moment may lose the last events of the run being recorded. The journal mode stays
  sqlite's default (a write-ahead log would keep the changes out of the `.db` file the Dagster
  UI watches for a running run's events).
Replaying the 3,157 events of a week's full build of 1,024 GPUs: 6.4 s (5.8 CPU s) with
Dagster's checks and sqlite's default, 3.9 s (3.7) with both changes (docs/performance.md).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sql import create_engine
from dagster._serdes import ConfigurableClassData
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine

#: sqlite settings of every connection the storage opens (see the module's docstring)
CONNECTION_PRAGMAS = ("synchronous=NORMAL",)


def _set_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    try:
        for pragma in CONNECTION_PRAGMAS:
            cursor.execute(f"pragma {pragma}")
    finally:
        cursor.close()


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: dict[tuple[int, str], Engine] = {}
        self._tables: set[str] = set()
        self._columns: set[tuple[str, str]] = set()
        self._batch = threading.local()
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(  # ty: ignore[invalid-method-override]
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> PooledSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
        held: dict[str, Connection] | None = getattr(self._batch, "connections", None)
        if held is not None and shard in held:
            yield held[shard]  # inside this thread's batch: its open transaction
            return
        with self._db_lock:
            key = (os.getpid(), shard)
            engine = self._engines.get(key)
            if engine is None:
                engine = create_engine(
                    self.conn_string_for_shard(shard),
                    pool_size=1,
                    max_overflow=4,  # _initdb opens a second connection
                    connect_args={"timeout": SQLITE_BUSY_TIMEOUT_SECONDS},
                )
                event.listen(engine, "connect", _set_pragmas)
                if shard not in self._initialized_dbs:
                    self._initdb(engine)
                    self._initialized_dbs.add(shard)
                self._engines[key] = engine
            if held is not None:
                # the batch keeps the connection and its transaction until all its events
                # are stored (`store_event_batch`)
                conn = engine.connect()
                conn.begin()
                held[shard] = conn
                yield conn
                return
            with engine.connect() as conn, conn.begin():
                yield conn

    def store_event_batch(self, events: Sequence[EventLogEntry]) -> None:
        """Store a batch of events in one transaction per database file: Dagster hands over
        the "planned" events of a run's start and the materialisations of one output's
        partitions this way when `DAGSTER_EVENT_BATCH_SIZE` is set (fleetledger/pipeline.py).
        All or nothing: on an error nothing of the batch is kept, and Dagster stores the
        events one by one instead."""
        if self._batch_open():
            for entry in events:
                self.store_event(entry)
            return
        held: dict[str, Connection] = {}
        self._batch.connections = held
        try:
            for entry in events:
                self.store_event(entry)
            for conn in held.values():
                conn.commit()
        except BaseException:
            for conn in held.values():
                conn.rollback()
            raise
        finally:
            self._batch.connections = None
            for conn in held.values():
                conn.close()

    def _batch_open(self) -> bool:
        return getattr(self._batch, "connections", None) is not None

    def has_table(self, table_name: str) -> bool:
        """Whether the index database has the table: asked of sqlite until it has it."""
        if table_name in self._tables:
            return True
        found = super().has_table(table_name)
        if found:
            self._tables.add(table_name)
        return found

    def _has_asset_key_col_on_connection(self, conn: Connection, column_name: str) -> bool:
        """Whether the asset keys table has the column: Dagster asks before every asset
        event's index row (inspecting the table's columns each time); a column found once is
        remembered, as the tables are."""
        if ("asset_keys", column_name) in self._columns:
            return True
        found = super()._has_asset_key_col_on_connection(conn, column_name)
        if found:
            self._columns.add(("asset_keys", column_name))
        return found

    def wipe(self) -> None:
        self._tables.clear()
        self._columns.clear()
        super().wipe()

    def dispose(self) -> None:
        with self._db_lock:
            engines = [e for (pid, _), e in self._engines.items() if pid == os.getpid()]
            self._engines.clear()
        for engine in engines:
            engine.dispose()
        super().dispose()
