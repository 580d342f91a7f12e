"""The run instance of a home writes Dagster's sqlite files through one connection per file
(fleetledger/dagster_storage.py); Dagster's default storage — what `dagster dev` on the same
directory uses — reads every event back. An operator's own storage in dagster.yaml is kept."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from dagster import (
    AssetCheckResult,
    AssetKey,
    DagsterEventType,
    DagsterInstance,
    Definitions,
    EventRecordsFilter,
    asset,
    asset_check,
    define_asset_job,
)
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage

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


def test_the_index_tables_are_looked_up_once_and_commits_sync_less(
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
    instance = run_instance(tmp_path)
    storage = instance.event_log_storage
    try:
        _run_twice(instance)
        # two runs, each an asset event with tags and a check result: every table asked once
        assert asked, "Dagster no longer asks: the cache is dead code"
        assert len(asked) == len(set(asked)), asked
        assert "asset_check_executions" in asked
        with storage.index_connection() as conn:
            assert conn.exec_driver_sql("pragma synchronous").scalar() == 1
    finally:
        instance.dispose()
    # a storage that asks every time (Dagster's own) asks more than once per table
    asked.clear()
    default = DagsterInstance.from_config(str(tmp_path / "dagster"))
    try:
        _run_twice(default)
        assert len(asked) > len(set(asked))
        with sqlite3.connect(tmp_path / "dagster" / "history" / "runs" / "index.db") as raw:
            assert raw.execute("pragma synchronous").fetchone()[0] == 2
    finally:
        default.dispose()
