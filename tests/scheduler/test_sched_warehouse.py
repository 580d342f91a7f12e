"""The new scheduler / telemetry landings and the quarantine in the warehouse: `dbt build` of
their staging views, `stg_quarantine__rows` and `fct_quarantine` over a home landed from the
samples (dbt's key tests of those models included)."""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import polars as pl
import pyarrow.parquet as pq
from dbt_in_process import dbt_build

from fleetledger.config import Config, Source
from ingest.core.landing import land, land_quarantine, write_schema_files
from ingest.registry import ingest_source
from ingest.scheduler.kubernetes_ksm import parse_ksm
from ingest.scheduler.kueue import parse_workloads

DAY = date(2025, 3, 9)
GPU09 = "power/cornell-biohpc-cbsugpu09-hourly-gpu-power-util-full.tsv"
MODELS = (
    "stg_kueue__workloads stg_kubernetes__gpu_requests stg_power__node_gpu_hourly "
    "stg_slurm__jobs stg_quarantine__rows fct_quarantine"
)


def test_staging_views_and_fct_quarantine(samples: Path, tmp_path: Path) -> None:
    from test_sched_ksm import TEXT as KSM_TEXT
    from test_sched_kueue import WORKLOADS

    home = tmp_path / "home"
    write_schema_files(home)
    cfg = Config(
        sources=[
            Source(
                name="odd",
                kind="slurm",
                location=str(samples / "slurm/xdmod-unknown-job-state.log"),
                options={"snapshot_date": DAY.isoformat()},
            ),
            Source(
                name="ub",
                kind="slurm",
                location=str(samples / "slurm/xdmod-accounting-logs.log"),
                options={"snapshot_date": DAY.isoformat(), "cluster": "ub-hpc"},
            ),
            Source(
                name="rollup",
                kind="power",
                location=str(samples / GPU09),
                options={"format": "node_gpu_rollup"},
            ),
        ]
    )
    for source in cfg.sources:
        ingest_source(cfg, source, [DAY], home)
    snap = datetime(2025, 3, 9, 23, 59, 59, tzinfo=UTC)
    wl = parse_workloads({"items": WORKLOADS}, source="kq", file="w.json", snapshot_at=snap)
    land(home, "kueue_workloads", "kq", f"date={DAY}", wl.rows)
    land_quarantine(home, "kq", f"date={DAY}", wl.quarantine)
    ksm = parse_ksm(KSM_TEXT.encode(), source="ksm", file="k.prom", default_time=snap)
    land(home, "k8s_gpu_requests", "ksm", f"date={DAY}", ksm.rows)
    land_quarantine(home, "ksm", f"date={DAY}", ksm.quarantine)
    # a billing-period quarantine partition and a node-events one sit beside them
    q = ksm.quarantine.head(1).with_columns(reason=pl.lit("empty BillingCurrency"))
    land_quarantine(home, "focus-main", "period=2025-03", q)
    land_quarantine(home, "ub.events", f"date={DAY}", q.with_columns(reason=pl.lit("bad line")))

    dbt_build(home, MODELS)

    # what the quarantine files hold, read with pyarrow
    expected: dict[tuple[str, str, str], int] = {}
    for f in (home / "raw/quarantine").glob("*/*/part-0.parquet"):
        for reason in pq.read_table(f).column("reason").to_pylist():
            key = (f.parent.parent.name, f.parent.name, reason)
            expected[key] = expected.get(key, 0) + 1
    assert sum(expected.values()) == 2 + 3 + 5 + 1 + 1
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    got = {
        (s, p, r): n
        for s, p, r, n in con.execute(
            'select source, "partition", reason, "rows" from fct_quarantine'
        ).fetchall()
    }
    assert got == expected
    assert con.execute(
        "select partition_kind, partition_date, billing_period from fct_quarantine "
        "where source = 'focus-main'"
    ).fetchall() == [("period", None, "2025-03")]
    assert con.execute(
        "select count(*), count(distinct quarantine_source) from staging.stg_quarantine__rows"
    ).fetchone() == (12, 5)

    assert con.execute(
        "select count(*), sum(gpus_requested), sum(gpus_admitted), sum(evicted_count) "
        "from staging.stg_kueue__workloads"
    ).fetchone() == (3, 32 + 2 + 4, 32, 3)
    assert con.execute(
        "select count(*), sum(gpus), sum(container_count) from staging.stg_kubernetes__gpu_requests"
    ).fetchone() == (3, 8, 4)
    assert con.execute(
        "select count(*), min(hour_start), max(hour_start) from staging.stg_power__node_gpu_hourly"
    ).fetchone() == (
        22,
        datetime(2025, 3, 9, 0, tzinfo=UTC),
        datetime(2025, 3, 9, 23, tzinfo=UTC),
    )
    assert con.execute(
        "select count(*), sum(gpus), sum(step_count), count(timelimit_seconds) "
        "from staging.stg_slurm__jobs"
    ).fetchone() == (4, 2, 0, 3)
