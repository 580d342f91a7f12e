"""The Dagster code location: asset graph, schedule, and one partition materialised through it."""

from __future__ import annotations

import json
import shutil
from collections import Counter
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import pytest
from dagster import (
    AssetKey,
    DagsterInstance,
    Definitions,
    build_schedule_context,
)

from fleetledger.config import config_path, load_config
from fleetledger.pipeline import PipelineError, run_pipeline
from fleetledger.publish import history_path
from orchestration.build import build_definitions
from orchestration.config_assets import CONFIG_TABLES_KEY
from orchestration.partitions import DAILY
from orchestration.publish import WAREHOUSE_SNAPSHOT_KEY
from orchestration.schedules import DAILY_JOB_NAME

INGEST_GROUPS = {"billing", "telemetry", "scheduler"}
MARTS = ["fct_gpu_hours", "fct_runs", "fct_run_costs", "fct_idle_gpu_hours", "fct_billing"]


def _keys(defs: Definitions) -> set[str]:
    return {k.to_user_string() for k in defs.resolve_all_asset_keys()}


def test_definitions_load_without_a_config(tmp_path: Path) -> None:
    defs = build_definitions(tmp_path)  # no fleetledger.yml there
    Definitions.validate_loadable(defs)
    keys = _keys(defs)
    assert "warehouse_snapshot" in keys
    assert "fct_gpu_hours" in keys
    # a model's key is its name, whichever schema its layer is published in
    assert {"stg_config__teams", "int_gpu_hour_states", "int_days"} <= keys
    assert not [k for k in keys if k.startswith(("staging/", "intermediate/"))]
    assert not [k for k in keys if k.startswith("raw/")]
    assert defs.resolve_schedule_def("fleetledger_daily_schedule")


def test_asset_graph_has_one_asset_per_source(small_fleet: Path) -> None:
    cfg = load_config(config_path(small_fleet))
    defs = build_definitions(small_fleet)
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    keys = _keys(defs)

    raw = {k for k in keys if k.startswith("raw/")}
    assert raw == {f"raw/{s.name}" for s in cfg.sources} | {CONFIG_TABLES_KEY.to_user_string()}
    for source in cfg.sources:
        node = graph.get(AssetKey(["raw", source.name]))
        assert node.group_name in INGEST_GROUPS
        # some dbt staging model reads what this source lands
        children = {c.to_user_string() for c in node.child_keys}
        assert children and not any(c.startswith("raw/") for c in children), source.name

    # the dbt sources `landing.<table>` became deps on the assets that land them
    all_keys = {k.to_user_string() for k in graph.get_all_asset_keys()}
    assert not [k for k in all_keys if k.startswith("landing/")]
    for mart in MARTS:
        assert mart in keys
    # publish runs after every dbt model
    ancestors: set[AssetKey] = set()
    todo = [WAREHOUSE_SNAPSHOT_KEY]
    while todo:
        for parent in graph.get(todo.pop()).parent_keys:
            if parent not in ancestors:
                ancestors.add(parent)
                todo.append(parent)
    dbt_keys = {k for k in graph.get_all_asset_keys() if "dbt" in graph.get(k).kinds}
    assert AssetKey("fct_gpu_hours") in dbt_keys
    assert dbt_keys <= ancestors
    assert graph.get(AssetKey("fct_gpu_hours")).group_name == "marts"
    # the forecasts run after the dbt marts they read and before publish
    for name in ("fct_forecast", "fct_capacity"):
        node = graph.get(AssetKey(name))
        assert node.group_name == "forecasts"
        assert AssetKey(name) in graph.get(WAREHOUSE_SNAPSHOT_KEY).parent_keys
    # budgets and alerts: after the dbt marts they read, before publish
    for key in ("fct_budget_status", "fct_alerts", "fct_alert_deliveries"):
        node = graph.get(AssetKey(key))
        assert node.group_name == "alerts" and AssetKey(key) in ancestors
        assert {AssetKey("fct_daily_spend"), AssetKey("fct_gpu_hours")} <= node.parent_keys

    # every asset: daily partitions, one run for a range
    for key in graph.get_all_asset_keys():
        node = graph.get(key)
        if node.is_materializable:
            assert node.partitions_def == DAILY, key
            assert node.backfill_policy is not None
            assert node.backfill_policy.max_partitions_per_run is None, key  # single run

    # dbt tests are asset checks
    checked = {k.asset_key.to_user_string() for k in graph.asset_check_keys}
    assert "fct_gpu_hours" in checked

    assert defs.resolve_job_def(DAILY_JOB_NAME)


def test_daily_schedule_materialises_yesterday(tmp_path: Path) -> None:
    defs = build_definitions(tmp_path)
    schedule = defs.resolve_schedule_def("fleetledger_daily_schedule")
    tick = datetime(2026, 10, 3, 1, 30, tzinfo=UTC)
    context = build_schedule_context(
        scheduled_execution_time=tick, repository_def=defs.get_repository_def()
    )
    request = schedule.evaluate_tick(context).run_requests[0]
    assert request.partition_key == "2026-10-02"


def test_one_partition_through_dagster(
    small_fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    shutil.copytree(small_fleet, home)
    monkeypatch.setenv("FLEETLEDGER_HOME", str(home))
    monkeypatch.delenv("DBT_LOG_LEVEL_FILE", raising=False)
    day = "2026-10-03"
    # a day-models file DuckDB cannot open, met by a run Dagster launched (not `fleetledger
    # run`): the dbt asset sets it aside itself and the build goes on (docs/operations.md)
    history_path(home).parent.mkdir(parents=True)
    history_path(home).write_bytes(b"not a database" * 1000)
    # and the folder an earlier version's write left when it crashed, of a source no longer
    # configured: the run settles it before dbt reads the landing zone and says so
    crashed = home / "raw" / "dcgm_samples" / "old-source" / ".tmp-date=2026-10-03-0123456789ab"
    crashed.mkdir(parents=True)
    (crashed / "part-0.parquet.partial").write_bytes(b"PAR1 half written")

    defs = build_definitions(home)
    result = defs.resolve_job_def(DAILY_JOB_NAME).execute_in_process(
        partition_key=day, instance=DagsterInstance.ephemeral(), raise_on_error=False
    )
    assert result.success
    moved = f"history.unreadable-{result.run_id[:8]}.duckdb"
    assert sorted(p.name for p in (home / "build").glob("history.unreadable-*")) == [moved]
    assert (home / "build" / moved).read_bytes() == b"not a database" * 1000
    partitions = {
        e.step_materialization_data.materialization.partition
        for e in result.get_asset_materialization_events()
    }
    assert partitions == {day}

    # only that day's telemetry landed
    dcgm = home / "raw" / "dcgm_samples"
    landed = {p.name for p in dcgm.glob("*/date=*")}
    assert landed == {f"date={day}"}

    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    try:
        n = con.execute(
            "select count(*) from fct_gpu_hours "
            "where hour >= ?::timestamptz and hour < ?::timestamptz + interval 1 day",
            [f"{day} 00:00:00+00", f"{day} 00:00:00+00"],
        ).fetchone()
        findings = con.execute(
            "select run_id, source, severity, message from fct_data_health "
            "where \"check\" = 'history_unreadable'"
        ).fetchall()
        settled = con.execute(
            "select run_id, source, severity, message from fct_data_health "
            "where \"check\" = 'crashed_write'"
        ).fetchall()
    finally:
        con.close()
    assert n is not None and n[0] > 0
    # the warning reached the data-health view, once, with DuckDB's error and where the file went
    assert len(findings) == 1, findings
    run_id, source, severity, message = findings[0]
    assert (run_id, source, severity) == (result.run_id, "build", "warning")
    assert "not a valid DuckDB database file" in message and f"build/{moved}" in message
    settled_message = (
        "dcgm_samples/old-source/date=2026-10-03: a crashed write's leftover folder "
        ".tmp-date=2026-10-03-0123456789ab removed"
    )
    assert settled == [(result.run_id, "landing", "warning", settled_message)]
    assert not crashed.exists()
    # dbt's file log is at info unless DBT_LOG_LEVEL_FILE asks for debug (docs/operations.md)
    log = home / "build" / "dbt" / result.run_id / "dbt.log"
    levels = Counter(json.loads(line)["info"]["level"] for line in log.read_text().splitlines())
    assert levels["info"] > 100 and levels["debug"] == 0, levels

    # a run Dagster launched for the dbt assets alone (no config step): the dbt step settles
    # another leftover itself and reports it in the build's data-health rows the same way
    crashed = home / "raw" / "slurm_jobs" / "old-source" / ".old-date=2026-10-03-ba9876543210"
    crashed.mkdir(parents=True)
    (crashed / "part-0.parquet.partial").write_bytes(b"PAR1 half written")
    # and a table of a model an upgrade renamed, which the build then drops
    con = duckdb.connect(str(home / "build" / "warehouse.duckdb"))
    con.execute("create table intermediate.int_spend_inputs as select 1 as x")
    con.close()
    dbt_keys = [
        k
        for k in defs.resolve_asset_graph().get_all_asset_keys()
        if k.path[0] != "raw" and k != WAREHOUSE_SNAPSHOT_KEY
    ]
    again = defs.resolve_implicit_global_asset_job_def().execute_in_process(
        partition_key=day, instance=DagsterInstance.ephemeral(), asset_selection=dbt_keys
    )
    assert again.success
    steps = {e.step_key for e in again.all_events if e.step_key}
    assert "dbt_warehouse" in steps and not [s for s in steps if "config" in s or "raw" in s]
    con = duckdb.connect(str(home / "build" / "warehouse.duckdb"), read_only=True)
    try:
        settled = con.execute(
            "select run_id, source, message from main.fct_data_health "
            "where \"check\" = 'crashed_write' order by run_id = ?",
            [again.run_id],
        ).fetchall()
        spend_copies = con.execute(
            "select table_name from information_schema.tables "
            "where table_name like 'int_spend%inputs' order by 1"
        ).fetchall()
    finally:
        con.close()
    # the first run's finding stays in the log of published runs' findings
    assert settled == [
        (result.run_id, "landing", settled_message),
        (
            again.run_id,
            "landing",
            "slurm_jobs/old-source/date=2026-10-03: a crashed write's leftover folder "
            ".old-date=2026-10-03-ba9876543210 removed",
        ),
    ]
    assert not crashed.exists()
    assert spend_copies == [("int_spend_line_inputs",), ("int_spend_run_inputs",)]


def test_pipeline_names_the_failing_asset(small_fleet: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(small_fleet, home)
    (home / "sources" / "gcp" / "k8s" / "pods-2026-10-03.json").write_text("{not json")
    day = date(2026, 10, 3)
    with pytest.raises(PipelineError) as info:
        run_pipeline(home, day, day, sources=["gke-pods"])
    message = str(info.value)
    assert "raw/gke-pods" in message
    assert "pods-2026-10-03.json" in message
    assert not (home / "warehouse.duckdb").exists()  # nothing published


def test_partitions_start_comes_from_the_config(tmp_path: Path) -> None:
    """Issue 11, finding 11: the first partition was fixed at 2024-01-01, so 2019-2023 bills
    and sacct logs could not be backfilled. `partitions_start` moves it; the default stays."""
    from fleetledger.pipeline import _validate_range
    from orchestration.sensors import partition_range

    (tmp_path / "fleetledger.yml").write_text(
        "partitions_start: 2019-06-01\n"
        "sources:\n  - {name: s, kind: slurm, location: sacct/*.txt}\n"
    )
    cfg = load_config(config_path(tmp_path))
    defs = build_definitions(tmp_path)
    graph = defs.resolve_asset_graph()
    for key in (AssetKey(["raw", "s"]), CONFIG_TABLES_KEY, WAREHOUSE_SNAPSHOT_KEY):
        assert graph.get(key).partitions_def.get_first_partition_key() == "2019-06-01"
    _validate_range(date(2019, 6, 1), date(2019, 6, 30), cfg)
    with pytest.raises(
        PipelineError, match="before the first partition 2019-06-01.*partitions_start"
    ):
        _validate_range(date(2019, 5, 31), date(2019, 6, 30), cfg)
    # a billing period is clipped to the configured first day
    assert partition_range("2019-06", graph.get(CONFIG_TABLES_KEY).partitions_def) == (
        "2019-06-01",
        "2019-06-30",
    )
    assert partition_range("2019-05") is None  # the default partitions start in 2024
    # without the key: 2024-01-01
    (tmp_path / "fleetledger.yml").write_text("sources: []\n")
    assert load_config(config_path(tmp_path)).partitions_start == date(2024, 1, 1)
    assert DAILY.get_first_partition_key() == "2024-01-01"
