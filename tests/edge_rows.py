"""Landing-table rows for the hand-made fleets the warehouse tests build (tests/test_edges.py,
tests/test_mapping_layouts.py, tests/test_gpu_replacement.py): FOCUS lines, DCGM samples, sacct
allocations, a frame of them; and the built warehouse to read them back from."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import polars_schema, write_schema_files

#: the day the edge fleets' Slurm exports are snapshotted
D2 = date(2026, 11, 17)


def frame(table: str, rows: list[dict[str, Any]]) -> pl.DataFrame:
    """Rows of a landing table, the columns a row leaves out null."""
    schema = polars_schema(table)
    return pl.DataFrame(
        [{c: r.get(c) for c in schema.names()} for r in rows], schema=schema, orient="row"
    )


def focus_line(key: str, resource: str | None, start: datetime, end: datetime, cost: float):
    return {
        "BilledCost": cost,
        "EffectiveCost": cost,
        "ListCost": cost,
        "ContractedCost": cost,
        "BillingCurrency": "USD",
        "BillingPeriodStart": datetime(2026, 11, 1, tzinfo=UTC),
        "BillingPeriodEnd": datetime(2026, 12, 1, tzinfo=UTC),
        "ChargePeriodStart": start,
        "ChargePeriodEnd": end,
        "ChargeCategory": "Purchase" if start == end else "Usage",
        "ResourceId": resource,
        "ServiceName": "Virtual Machines" if resource else "Marketplace",
        "ServiceCategory": "Compute",
        "ProviderName": "Microsoft",
        "SubAccountId": "sub-1",
        "x_provider": "azure",
        "x_source_format": "focus_csv",
        "x_focus_version": "1.0",
        "x_billing_period": "2026-11",
        "x_source": "azure-focus",
        "x_source_file": "focus.csv",
        "x_line_number": int(key),
    }


def dcgm(host: str, gpu: int, t: datetime, metric: str, value: float, **labels: Any):
    return {
        "time": t,
        "host": host,
        "gpu": gpu,
        "uuid": f"GPU-{labels.pop('uuid_host', host)}-{gpu}",
        "mig_instance": None,
        "metric": metric,
        "value": value,
        "x_source": labels.pop("source", "dcgm"),
        "x_source_file": "scrape.prom",
        **labels,
    }


def slurm_job(
    job: str,
    host: str,
    gpus: int,
    start: datetime,
    end: datetime,
    account: str = "research",
    cluster: str = "c1",
):
    return {
        "cluster": cluster,
        "job_id": job,
        "job_id_raw": job,
        "partition": "gpu",
        "account": account,
        "user_name": "ana",
        "submit": start,
        "eligible": start,
        "start": start,
        "end": end,
        "elapsed_seconds": int((end - start).total_seconds()),
        "exit_code": 0,
        "state": "COMPLETED",
        "nnodes": 1,
        "gpus": gpus,
        "hosts": [host],
        "x_snapshot_date": D2,
        "x_source": "slurm",
        "x_source_file": "sacct.txt",
    }


def every(start: datetime, end: datetime, step_s: int) -> list[datetime]:
    out, t = [], start
    while t < end:
        out.append(t)
        t += timedelta(seconds=step_s)
    return out


def built_warehouse(home: Path) -> Iterator[duckdb.DuckDBPyConnection]:
    """The build warehouse of a hand-made fleet, read-only, times in UTC (a fixture's body:
    `yield from built_warehouse(home)`)."""
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    try:
        yield con
    finally:
        con.close()


def built_rows(home: Path, sql: str) -> list[tuple]:
    """`sql`'s rows in the build warehouse of a hand-made fleet, its day models' file attached
    as `history` (read-only)."""
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    try:
        con.execute(f"attach '{home / 'build/history.duckdb'}' as history (read_only)")
        return con.execute(sql).fetchall()
    finally:
        con.close()


def one_node_home(home: Path, gpus: int, teams: list[dict[str, Any]], days: list[date]) -> None:
    """A hand-made home's set-up (the incremental tests' fleets): the landing tables' schemas,
    a config of one on-prem node `n-1` (site `lab`, cluster `c1`, H100s) and its team rules,
    and the accounted `days`."""
    node = {"provider": "onprem", "site": "lab", "gpu_model": "H100", "cluster": "c1"}
    write_schema_files(home)
    inventory = [{"host": "n-1", "gpus": gpus, **node}]
    write_config_tables(Config(inventory=inventory, teams=teams), home)
    record_accounted_days(home, days)
