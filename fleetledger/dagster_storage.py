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
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster._core.storage.event_log.sqlite.sqlite_event_log import (
    SQLITE_BUSY_TIMEOUT_SECONDS,
    SqliteEventLogStorage,
)
from dagster._core.storage.sql import create_engine
from dagster._serdes import ConfigurableClassData
from sqlalchemy.engine import Connection, Engine


class PooledSqliteEventLogStorage(SqliteEventLogStorage):
    def __init__(self, base_dir: str, inst_data: ConfigurableClassData | None = None) -> None:
        self._engines: dict[tuple[int, str], Engine] = {}
        super().__init__(base_dir, inst_data)

    @classmethod
    def from_config_value(  # ty: ignore[invalid-method-override]
        cls, inst_data: ConfigurableClassData | None, config_value: Any
    ) -> PooledSqliteEventLogStorage:
        return cls(inst_data=inst_data, **config_value)

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:
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
                if shard not in self._initialized_dbs:
                    self._initdb(engine)
                    self._initialized_dbs.add(shard)
                self._engines[key] = engine
            with engine.connect() as conn, conn.begin():
                yield conn

    def dispose(self) -> None:
        with self._db_lock:
            engines = [e for (pid, _), e in self._engines.items() if pid == os.getpid()]
            self._engines.clear()
        for engine in engines:
            engine.dispose()
        super().dispose()
