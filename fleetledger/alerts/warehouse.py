"""Write the alert marts and the alert findings into a warehouse (the build one, in a run).

`fct_budget_status`, `fct_alerts` and `fct_alert_deliveries` are replaced whole from the
evaluation and the state store (which outlives every rebuild); the run's alert findings are
added to `fct_data_health` under source `alerts`, stamped with the run, so the console summary,
the data-health view and the findings log see them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import polars as pl

from fleetledger.alerts.engine import AlertRun
from ingest.core.findings import IngestFinding

MART_TABLES = ("fct_budget_status", "fct_alerts", "fct_alert_deliveries")
FINDINGS_SOURCE = "alerts"


def _replace(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    con.register("_alert_frame", frame.to_arrow())
    try:
        con.execute(f"create or replace table main.{table} as select * from _alert_frame")
    finally:
        con.unregister("_alert_frame")


def write_alert_marts(
    warehouse: Path, run: AlertRun, run_id: str, run_at: datetime | None = None
) -> None:
    con = duckdb.connect(str(warehouse))
    try:
        con.execute("begin")
        _replace(con, "fct_budget_status", run.budget_status)
        _replace(con, "fct_alerts", run.alerts)
        _replace(con, "fct_alert_deliveries", run.deliveries)
        _add_findings(con, run.findings, run_id, run_at)
        con.execute("commit")
    finally:
        con.close()


def _add_findings(
    con: duckdb.DuckDBPyConnection,
    findings: list[IngestFinding],
    run_id: str,
    run_at: datetime | None,
) -> None:
    tables = {r[0] for r in con.execute("select table_name from duckdb_tables()").fetchall()}
    if not findings or "fct_data_health" not in tables:
        return
    row = con.execute(
        "select max(run_at) from main.fct_data_health where run_id = ?", [run_id]
    ).fetchone()
    stamp = (row[0] if row and row[0] is not None else None) or (
        run_at or datetime.now(UTC)
    ).replace(tzinfo=None)
    for f in findings:
        con.execute(
            'insert into main.fct_data_health (run_at, run_id, source, day, "check", severity, '
            "count, message) values (?, ?, ?, ?, ?, ?, ?, ?)",
            [stamp, run_id, FINDINGS_SOURCE, f.day, f.check, f.severity, f.count, f.message],
        )
