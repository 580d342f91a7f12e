"""The run instance of a home writes Dagster's sqlite files through one connection per file
(fleetledger/dagster_storage.py); Dagster's default storage — what `dagster dev` on the same
directory uses — reads every event back. An operator's own storage in dagster.yaml is kept."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import pytest
from dagster import (
    AssetCheckResult,
    AssetKey,
    BackfillPolicy,
    DagsterEventType,
    DagsterInstance,
    DailyPartitionsDefinition,
    Definitions,
    EventRecordsFilter,
    asset,
    asset_check,
    define_asset_job,
)
from dagster._core.events.log import EventLogEntry
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.tags import (
    ASSET_PARTITION_RANGE_END_TAG,
    ASSET_PARTITION_RANGE_START_TAG,
)
from sqlalchemy import event as sa_event

from fleetledger.dagster_home import ensure_dagster_home, run_instance
from fleetledger.dagster_storage import PooledSqliteEventLogStorage


@asset
def numbers() -> int:
    return 3


@asset_check(asset=numbers)
def numbers_positive() -> AssetCheckResult:
    return AssetCheckResult(passed=True)


def _run_twice(instance: DagsterInstance) -> list[str]:
    defs = Definitions(
        assets=[numbers], asset_checks=[numbers_positive], jobs=[define_asset_job("j")]
    )
    job = defs.resolve_job_def("j")
    ids = []
    for _ in range(2):
        result = job.execute_in_process(instance=instance)
        assert result.success
        ids.append(result.run_id)
    return ids


def test_runs_written_pooled_read_back_by_the_default_storage(tmp_path: Path) -> None:
    instance = run_instance(tmp_path)
    assert isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
    try:
        run_ids = _run_twice(instance)
    finally:
        instance.dispose()
    default = DagsterInstance.from_config(str(tmp_path / "dagster"))
    try:
        assert type(default.event_log_storage).__name__ == "SqliteEventLogStorage"
        assert {r.run_id for r in default.get_runs()} == set(run_ids)
        for run_id in run_ids:
            events = default.all_logs(run_id)
            kinds = {e.dagster_event.event_type for e in events if e.dagster_event}
            assert DagsterEventType.RUN_SUCCESS in kinds
            assert DagsterEventType.ASSET_MATERIALIZATION in kinds
            assert DagsterEventType.ASSET_CHECK_EVALUATION in kinds
        # the cross-run index: both materialisations of the asset, in order
        records = default.get_event_records(
            EventRecordsFilter(
                event_type=DagsterEventType.ASSET_MATERIALIZATION, asset_key=AssetKey("numbers")
            )
        )
        assert sorted(r.run_id for r in records) == sorted(run_ids)
    finally:
        default.dispose()


def test_an_operators_storage_in_dagster_yaml_is_kept(tmp_path: Path) -> None:
    path = ensure_dagster_home(tmp_path)
    base = tmp_path / "elsewhere"
    (path / "dagster.yaml").write_text(
        f"storage:\n  sqlite:\n    base_dir: {base}\ntelemetry:\n  enabled: false\n"
    )
    instance = run_instance(tmp_path)
    try:
        assert not isinstance(instance.event_log_storage, PooledSqliteEventLogStorage)
        _run_twice(instance)
    finally:
        instance.dispose()
    assert any(base.rglob("*.db"))


def test_the_index_tables_and_columns_are_looked_up_once_and_commits_sync_less(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Dagster asks whether an index table exists before each asset event's tags and each
    check result; the storage asks sqlite until the table is there, then remembers it. Its
    connections commit with `synchronous=NORMAL` (1), sqlite's default being FULL (2)."""
    asked: list[str] = []
    original = SqliteEventLogStorage.has_table

    def counted(self: SqliteEventLogStorage, table_name: str) -> bool:
        asked.append(table_name)
        return original(self, table_name)

    monkeypatch.setattr(SqliteEventLogStorage, "has_table", counted)
    # and whether the asset keys table has a column, before every asset event's index row
    columns: list[str] = []
    original_col = SqliteEventLogStorage._has_asset_key_col_on_connection

    def counted_col(self: SqliteEventLogStorage, conn: object, column: str) -> bool:
        columns.append(column)
        return original_col(self, conn, column)

    monkeypatch.setattr(SqliteEventLogStorage, "_has_asset_key_col_on_connection", counted_col)
    instance = run_instance(tmp_path)
    storage = instance.event_log_storage
    try:
        _run_twice(instance)
        # two runs, each an asset event with tags and a check result: every table asked once
        assert asked, "Dagster no longer asks: the cache is dead code"
        assert len(asked) == len(set(asked)), asked
        assert "asset_check_executions" in asked
        assert len(columns) == len(set(columns)), columns
        assert "last_materialization_timestamp" in columns
        with storage.index_connection() as conn:
            assert conn.exec_driver_sql("pragma synchronous").scalar() == 1
    finally:
        instance.dispose()
    # a storage that asks every time (Dagster's own) asks more than once per table
    asked.clear()
    default = DagsterInstance.from_config(str(tmp_path / "dagster"))
    try:
        columns.clear()
        _run_twice(default)
        assert len(asked) > len(set(asked))
        assert len(columns) > len(set(columns))
        with sqlite3.connect(tmp_path / "dagster" / "history" / "runs" / "index.db") as raw:
            assert raw.execute("pragma synchronous").fetchone()[0] == 2
    finally:
        default.dispose()


DAYS = DailyPartitionsDefinition(start_date="2026-11-01", end_date="2026-11-06")


@asset(partitions_def=DAYS, backfill_policy=BackfillPolicy.single_run())
def day_rows(context) -> None:  # unannotated: Dagster cannot read a string annotation
    context.log.info(f"{len(context.partition_keys)} days")


def _run_days(instance: DagsterInstance) -> str:
    job = Definitions(assets=[day_rows], jobs=[define_asset_job("d")]).resolve_job_def("d")
    result = job.execute_in_process(
        instance=instance,
        tags={
            ASSET_PARTITION_RANGE_START_TAG: "2026-11-01",
            ASSET_PARTITION_RANGE_END_TAG: "2026-11-05",
        },
    )
    assert result.success
    return result.run_id


def test_a_batch_of_events_is_one_transaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With `DAGSTER_EVENT_BATCH_SIZE` set (as `fleetledger run` sets it), Dagster hands the
    storage a run's five "planned" events and its five day materialisations as two batches;
    each is stored in one transaction per database file, and the default storage reads every
    event back."""
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "10000")
    batches: list[int] = []
    original = PooledSqliteEventLogStorage.store_event_batch

    def counted(self: PooledSqliteEventLogStorage, events: Sequence[EventLogEntry]) -> None:
        batches.append(len(events))
        original(self, events)

    monkeypatch.setattr(PooledSqliteEventLogStorage, "store_event_batch", counted)
    commits = 0

    def count_commit(*_: object) -> None:
        nonlocal commits
        commits += 1

    instance = run_instance(tmp_path)
    storage = instance.event_log_storage
    try:
        with storage.index_connection() as conn:
            sa_event.listen(conn.engine, "commit", count_commit)
        run_id = _run_days(instance)
    finally:
        instance.dispose()
    assert batches == [5, 5]
    default = DagsterInstance.from_config(str(tmp_path / "dagster"))
    try:
        kinds = [e.dagster_event.event_type for e in default.all_logs(run_id) if e.dagster_event]
        assert kinds.count(DagsterEventType.ASSET_MATERIALIZATION_PLANNED) == 5
        assert kinds.count(DagsterEventType.ASSET_MATERIALIZATION) == 5
        assert default.get_materialized_partitions(AssetKey("day_rows")) == {
            f"2026-11-0{d}" for d in range(1, 6)
        }
    finally:
        default.dispose()
    # the index database: the run's three status events (each its own transaction) and one
    # commit per batch of five asset events; one commit per event would be 3 + 10 = 13
    assert commits == 3 + 2


def test_a_failed_batch_keeps_none_of_its_events(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch is all or nothing: when its third event fails, its first two are rolled back in
    both database files (Dagster then stores the events one by one, which this test does not
    reach: it calls the storage directly)."""
    monkeypatch.setenv("DAGSTER_EVENT_BATCH_SIZE", "10000")
    instance = run_instance(tmp_path)
    storage = instance.event_log_storage
    try:
        run_id = _run_days(instance)
        events = [
            e
            for e in storage.get_logs_for_run(run_id)
            if e.dagster_event
            and e.dagster_event.event_type == DagsterEventType.ASSET_MATERIALIZATION
        ]
        before = len(storage.get_logs_for_run(run_id))
        stored = 0
        original = SqliteEventLogStorage.store_event

        def third_fails(self: SqliteEventLogStorage, entry: EventLogEntry) -> None:
            nonlocal stored
            stored += 1
            if stored == 3:
                raise RuntimeError("disk full")
            original(self, entry)

        monkeypatch.setattr(SqliteEventLogStorage, "store_event", third_fails)
        with pytest.raises(RuntimeError, match="disk full"):
            storage.store_event_batch(events)
        monkeypatch.setattr(SqliteEventLogStorage, "store_event", original)
        assert len(storage.get_logs_for_run(run_id)) == before
        records = storage.get_event_records(
            EventRecordsFilter(
                event_type=DagsterEventType.ASSET_MATERIALIZATION, asset_key=AssetKey("day_rows")
            )
        )
        assert len(records) == 5
    finally:
        instance.dispose()
