"""The raw landing zone: table schemas and atomic partition writes (see docs/landing.md).

Layout: `<home>/raw/<table>/<source>/<partition>/part-0.parquet`, where a partition is
`date=YYYY-MM-DD` or `period=YYYY-MM`. A partition is written into a temporary folder beside it
and swapped in whole, so a re-ingest replaces it and never appends.
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from collections.abc import Iterable
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

from ingest.billing.tables import BILLING_TABLES
from ingest.core.errors import IngestError

TS = pa.timestamp("us", tz="UTC")
STR = pa.string()
F64 = pa.float64()
I64 = pa.int64()

LINEAGE: list[tuple[str, pa.DataType]] = [
    ("x_source", STR),
    ("x_source_file", STR),
    ("x_line_number", I64),
]

QUARANTINE_TABLE = "quarantine"

# Columns of CUR 2.0 that FORMATS.md names, with the types CUR 2.0 uses. The map columns are
# landed as JSON object strings.
CUR_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("bill_billing_period_start_date", TS),
    ("bill_billing_period_end_date", TS),
    ("bill_payer_account_id", STR),
    ("line_item_usage_account_id", STR),
    ("line_item_line_item_type", STR),
    ("line_item_usage_start_date", TS),
    ("line_item_usage_end_date", TS),
    ("line_item_product_code", STR),
    ("line_item_usage_type", STR),
    ("line_item_operation", STR),
    ("line_item_resource_id", STR),
    ("line_item_usage_amount", F64),
    ("line_item_unblended_rate", F64),
    ("line_item_unblended_cost", F64),
    ("line_item_net_unblended_cost", F64),
    ("line_item_currency_code", STR),
    ("product_instance_type", STR),
    ("product_region_code", STR),
    ("pricing_public_on_demand_cost", F64),
    ("pricing_public_on_demand_rate", F64),
    ("pricing_term", STR),
    ("pricing_unit", STR),
    ("savings_plan_savings_plan_a_r_n", STR),
    ("savings_plan_savings_plan_effective_cost", F64),
    ("savings_plan_total_commitment_to_date", F64),
    ("savings_plan_used_commitment", F64),
    ("reservation_reservation_a_r_n", STR),
    ("reservation_effective_cost", F64),
    ("reservation_unused_amortized_upfront_fee_for_billing_period", F64),
    ("reservation_unused_recurring_fee", F64),
    ("split_line_item_parent_resource_id", STR),
    ("split_line_item_split_usage", F64),
    ("split_line_item_split_usage_ratio", F64),
    ("split_line_item_split_cost", F64),
    ("split_line_item_unused_cost", F64),
    ("split_line_item_public_on_demand_split_cost", F64),
    ("resource_tags", STR),
    ("cost_category", STR),
    ("product", STR),
    ("discount", STR),
    ("identity_line_item_id", STR),
    ("identity_time_interval", STR),
    ("line_item_line_item_description", STR),
    ("split_line_item_net_split_cost", F64),
    ("split_line_item_net_unused_cost", F64),
    ("x_execution_id", STR),
    ("x_billing_period", STR),
]
CUR_MAP_COLUMNS = ("resource_tags", "cost_category", "product", "discount")

# One row per service and currency of each CUR delivery (manifest) landed: what it said, kept
# across restatements (not replaced per period). See ingest/billing/aws_deliveries.py.
CUR_DELIVERY_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("billing_period", STR),
    ("delivery_id", STR),
    ("format", STR),
    ("manifest", STR),
    ("manifest_version", STR),
    ("delivered_at", TS),
    ("ingested_at", TS),
    ("service", STR),
    ("currency", STR),
    ("line_count", I64),
    ("billed_cost", F64),
    ("effective_cost", F64),
    ("list_cost", F64),
]

_TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    # open-ended: only the lineage columns are fixed; the rest is the schema file's hint
    "aws_cur_lines": CUR_COLUMNS,
    "aws_cur_deliveries": CUR_DELIVERY_COLUMNS,
    "gcp_billing_lines": [
        ("billing_account_id", STR),
        ("service_id", STR),
        ("service_description", STR),
        ("sku_id", STR),
        ("sku_description", STR),
        ("usage_start_time", TS),
        ("usage_end_time", TS),
        ("project_id", STR),
        ("project_name", STR),
        ("labels", STR),
        ("location_region", STR),
        ("location_zone", STR),
        ("resource_name", STR),
        ("resource_global_name", STR),
        ("cost", F64),
        ("currency", STR),
        ("currency_conversion_rate", F64),
        ("usage_amount", F64),
        ("usage_unit", STR),
        ("usage_amount_in_pricing_units", F64),
        ("usage_pricing_unit", STR),
        ("credits_amount", F64),
        ("credits", STR),
        ("invoice_month", STR),
        ("cost_type", STR),
        ("cost_at_list", F64),
        ("export_time", TS),
    ],
    "dcgm_samples": [
        ("time", TS),
        ("host", STR),
        ("gpu", pa.int32()),
        ("uuid", STR),
        ("mig_instance", STR),
        ("mig_profile", STR),
        ("metric", STR),
        ("value", F64),
        ("model_name", STR),
        ("hpc_job", STR),
        ("namespace", STR),
        ("pod", STR),
        ("container", STR),
        ("labels", STR),  # the series' other labels, JSON object string (ingest/telemetry/dcgm_labels.py)
    ],
    "slurm_jobs": [
        ("cluster", STR),
        ("job_id", STR),
        ("job_id_raw", STR),
        ("array_job_id", STR),
        ("array_task_id", I64),
        ("partition", STR),
        ("qos", STR),
        ("account", STR),
        ("group_name", STR),
        ("user_name", STR),
        ("submit", TS),
        ("eligible", TS),
        ("start", TS),
        ("end", TS),
        ("elapsed_seconds", I64),
        ("exit_code", I64),
        ("exit_signal", I64),
        ("state", STR),
        ("cancelled_by", I64),
        ("nnodes", I64),
        ("ncpus", I64),
        ("gpus", I64),
        ("alloc_tres", STR),
        ("req_tres", STR),
        ("timelimit", STR),
        ("nodelist", STR),
        ("hosts", pa.list_(STR)),
        ("job_name", STR),
        ("het_job_id", STR),
        ("het_job_offset", I64),
        ("array_task_ids", pa.list_(I64)),
        ("gid", I64),
        ("uid", I64),
        ("req_cpus", I64),
        ("req_mem", STR),
        ("req_mem_mib", F64),
        ("req_mem_per", STR),
        ("alloc_mem_mib", F64),
        ("timelimit_seconds", I64),
        ("step_count", I64),
        ("max_rss_mib", F64),
        ("gpu_indices", pa.list_(I64)),  # IDX of old-style GRES strings
        ("x_snapshot_date", pa.date32()),
    ],
    "slurm_node_events": [
        ("cluster", STR),
        ("node", STR),
        ("time_start", TS),
        ("time_end", TS),
        ("state", STR),
        ("reason", STR),
    ],
    "k8s_pods": [
        ("cluster", STR),
        ("uid", STR),
        ("name", STR),
        ("namespace", STR),
        ("node", STR),
        ("phase", STR),
        ("created_at", TS),
        ("started_at", TS),
        ("finished_at", TS),
        ("gpus", I64),
        ("mig_slices", I64),
        ("labels", STR),
        ("exit_code", I64),
        ("reason", STR),
        ("snapshot_at", TS),
    ],
    "power_readings": [
        ("time", TS),
        ("site", STR),
        ("meter", STR),
        ("kind", STR),
        ("kw", F64),
    ],
    "node_gpu_power_hourly": [
        ("time", TS),
        ("host", STR),
        ("interval_seconds", I64),
        ("power_avg_w", F64),
        ("power_min_w", F64),
        ("power_max_w", F64),
        ("temp_avg_c", F64),
        ("temp_min_c", F64),
        ("temp_max_c", F64),
        ("util_avg", F64),
        ("util_min", F64),
        ("util_max", F64),
        ("gmem_avg", F64),
        ("gmem_min", F64),
        ("gmem_max", F64),
    ],
    "kueue_workloads": [
        ("cluster", STR),
        ("uid", STR),
        ("name", STR),
        ("namespace", STR),
        ("queue_name", STR),
        ("cluster_queue", STR),
        ("priority", I64),
        ("priority_class", STR),
        ("owner_kind", STR),
        ("owner_name", STR),
        ("owner_uid", STR),
        ("created_at", TS),
        ("quota_reserved_at", TS),
        ("admitted_at", TS),
        ("pods_ready_at", TS),
        ("finished_at", TS),
        ("finished_reason", STR),
        ("evicted_count", I64),
        ("evicted_reason", STR),
        ("evicted_at", TS),
        ("requeue_count", I64),
        ("requeue_at", TS),
        ("past_admitted_seconds", I64),
        ("pod_sets", STR),
        ("pod_count", I64),
        ("gpus_requested", I64),
        ("gpus_admitted", I64),
        ("flavors", STR),
        ("labels", STR),
        ("snapshot_at", TS),
    ],
    "k8s_gpu_requests": [
        ("time", TS),
        ("cluster", STR),
        ("namespace", STR),
        ("pod", STR),
        ("uid", STR),
        ("node", STR),
        ("resource", STR),
        ("containers", I64),
        ("gpus", I64),
    ],
    # one row per checkpoint marker line of a job log file (ingest/scheduler/run_logs.py)
    "run_log_checkpoints": [
        ("scheduler", STR),
        ("cluster", STR),
        ("job_id_raw", STR),
        ("job_id", STR),
        ("namespace", STR),
        ("pod", STR),
        ("checkpoint_at", TS),
        ("message", STR),
    ],
    # the days `fleetledger run` was asked for: the hour spine (fleetledger/config_tables.py)
    "accounted_days": [
        ("day", pa.date32()),
        ("recorded_at", TS),
    ],
    # the data-health findings of each published run (fleetledger/data_health.py)
    "data_health_log": [
        ("run_at", TS),
        ("run_id", STR),
        ("source", STR),
        ("day", pa.date32()),
        ("check_name", STR),
        ("severity", STR),
        ("count", I64),
        ("message", STR),
    ],
    QUARANTINE_TABLE: [
        ("reason", STR),
        ("raw", STR),
    ],
}

#: tables whose columns are fixed by the contract (every column of the schema is written)
FIXED_TABLES = (
    "aws_cur_deliveries",
    "gcp_billing_lines",
    "dcgm_samples",
    "slurm_jobs",
    "slurm_node_events",
    "k8s_pods",
    "power_readings",
)
#: scheduler and telemetry tables of the Kueue, kube-state-metrics and GPU rollup readers
FIXED_TABLES += ("kueue_workloads", "k8s_gpu_requests", "node_gpu_power_hourly")
#: checkpoint markers of job log files (ingest/scheduler/run_logs.py)
FIXED_TABLES += ("run_log_checkpoints",)
#: the accounted days, recorded by the pipeline
FIXED_TABLES += ("accounted_days", "data_health_log")
#: tables whose columns are the source's own (only lineage is fixed)
OPEN_TABLES = ("aws_cur_lines",)
#: FOCUS / Azure / OCI lines, Cloud Catalog prices, source totals (ingest/billing/tables.py)
_TABLES.update(BILLING_TABLES)
FIXED_TABLES += tuple(BILLING_TABLES)
TABLES = (*OPEN_TABLES, *FIXED_TABLES, QUARANTINE_TABLE)


def _with_lineage(cols: list[tuple[str, pa.DataType]], table: str) -> pa.Schema:
    if table == QUARANTINE_TABLE:
        return pa.schema([*LINEAGE, *cols])
    return pa.schema([*cols, *LINEAGE])


SCHEMAS: dict[str, pa.Schema] = {t: _with_lineage(c, t) for t, c in _TABLES.items()}


def arrow_schema(table: str) -> pa.Schema:
    """The Arrow schema of a landing table (for `aws_cur_lines`: the known columns only)."""
    try:
        return SCHEMAS[table]
    except KeyError:
        raise IngestError(f"unknown landing table {table!r}") from None


def _polars_type(t: pa.DataType) -> pl.DataType:
    if pa.types.is_string(t):
        return pl.String()
    if pa.types.is_float64(t):
        return pl.Float64()
    if pa.types.is_int64(t):
        return pl.Int64()
    if pa.types.is_int32(t):
        return pl.Int32()
    if pa.types.is_date32(t):
        return pl.Date()
    if pa.types.is_timestamp(t):
        return pl.Datetime(t.unit, t.tz)  # type: ignore[attr-defined]
    if pa.types.is_list(t):
        return pl.List(_polars_type(t.value_type))  # type: ignore[attr-defined]
    raise TypeError(f"no polars type for {t}")


def polars_schema(table: str) -> pl.Schema:
    """The polars schema of a landing table, for building empty frames and casting.

    (Built without pyarrow's table machinery, which imports pandas: readers stay light.)"""
    return pl.Schema({f.name: _polars_type(f.type) for f in arrow_schema(table)})


def empty_frame(table: str) -> pl.DataFrame:
    return pl.DataFrame(schema=polars_schema(table))


def empty_quarantine() -> pl.DataFrame:
    return empty_frame(QUARANTINE_TABLE)


_PARTITION = re.compile(r"^(date=\d{4}-\d{2}-\d{2}|period=\d{4}-\d{2})$")
_SOURCE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")


def partition_dir(home: Path, table: str, source: str, partition: str) -> Path:
    if table not in SCHEMAS:
        raise IngestError(f"unknown landing table {table!r}")
    if not _SOURCE.match(source):
        raise IngestError(f"invalid source name {source!r}")
    if not _PARTITION.match(partition):
        raise IngestError(
            f"invalid partition {partition!r} (expected date=YYYY-MM-DD or period=YYYY-MM)"
        )
    return Path(home) / "raw" / table / source / partition


def to_arrow(table: str, df: pl.DataFrame) -> pa.Table:
    """Cast a frame to the landing table's Arrow schema.

    Fixed tables: exactly the schema's columns in order (a missing column is an error; extra
    columns are an error too). `aws_cur_lines`: every column kept, the known ones cast to their
    CUR 2.0 types, lineage required.
    """
    schema = arrow_schema(table)
    if table in OPEN_TABLES:
        missing = [n for n, _ in LINEAGE if n not in df.columns]
        if missing:
            raise IngestError(f"{table}: frame lacks lineage columns {missing}")
        arrow = df.to_arrow()
        fields = []
        for f in arrow.schema:
            if f.name in schema.names:
                fields.append(pa.field(f.name, schema.field(f.name).type))
            elif pa.types.is_large_string(f.type) or pa.types.is_string_view(f.type):
                fields.append(pa.field(f.name, STR))
            else:
                fields.append(f)
        return _cast(arrow, pa.schema(fields), table)
    missing = [n for n in schema.names if n not in df.columns]
    extra = [c for c in df.columns if c not in schema.names]
    if missing or extra:
        raise IngestError(
            f"{table}: frame does not match the schema: missing {missing}, extra {extra}"
        )
    arrow = df.select(schema.names).to_arrow()
    return _cast(arrow, schema, table)


def _cast(arrow: pa.Table, schema: pa.Schema, table: str) -> pa.Table:
    try:
        return arrow.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
        raise IngestError(f"{table}: cannot cast to the landing schema: {err}") from None


def _cleanup_leftovers(parent: Path, partition: str) -> None:
    if not parent.exists():
        return
    for p in parent.iterdir():
        if p.name.startswith((f".tmp-{partition}-", f".old-{partition}-")):
            shutil.rmtree(p, ignore_errors=True)


def _write_partition(
    target: Path, arrow: pa.Table | None, batches: Iterable[pa.Table] = (), table: str = ""
) -> tuple[Path, int]:
    """Write one table (or a stream of tables with one schema, as row groups) into a temporary
    folder beside `target`, then swap it in. Returns the file and the rows written."""
    parent = target.parent
    parent.mkdir(parents=True, exist_ok=True)
    _cleanup_leftovers(parent, target.name)
    token = uuid.uuid4().hex[:12]
    tmp = parent / f".tmp-{target.name}-{token}"
    tmp.mkdir()
    rows = 0
    try:
        # the name does not end in .parquet until it is complete, so a crashed write leaves
        # nothing a `**/*.parquet` glob would read
        partial = tmp / "part-0.parquet.partial"
        if arrow is not None:
            pq.write_table(arrow, partial, compression="zstd")
            rows = arrow.num_rows
        else:
            schema = arrow_schema(table)
            with pq.ParquetWriter(partial, schema, compression="zstd") as writer:
                for batch in batches:
                    if batch.num_rows:
                        writer.write_table(batch)
                        rows += batch.num_rows
        os.replace(partial, tmp / "part-0.parquet")
        old = parent / f".old-{target.name}-{token}"
        if target.exists():
            os.replace(target, old)
        os.replace(tmp, target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return target / "part-0.parquet", rows


def land(home: Path, table: str, source: str, partition: str, df: pl.DataFrame) -> Path:
    """Write `df` as `home/raw/<table>/<source>/<partition>/part-0.parquet`, replacing the
    partition whole. Returns the file written."""
    target = partition_dir(home, table, source, partition)
    return _write_partition(target, to_arrow(table, df))[0]


def land_frames(
    home: Path, table: str, source: str, partition: str, frames: Iterable[pl.DataFrame]
) -> tuple[Path, int]:
    """Like `land`, for a partition too large to hold at once: each frame (e.g. one source
    file) is written as it comes, as row groups of one file. If the iterable raises, nothing
    is landed and the old partition stays. Fixed-schema tables only. Returns (file, rows)."""
    if table not in FIXED_TABLES:
        raise IngestError(f"land_frames: {table} has no fixed schema")
    target = partition_dir(home, table, source, partition)
    return _write_partition(target, None, (to_arrow(table, df) for df in frames), table=table)


def land_record(
    home: Path, table: str, source: str, partition: str, name: str, df: pl.DataFrame
) -> Path:
    """Write `df` as `home/raw/<table>/<source>/<partition>/<name>.parquet` beside the other
    records of the partition (for append-only tables such as `aws_cur_deliveries`): the file is
    written under a temporary name and renamed, so a record is whole or absent, and writing the
    same `name` again replaces it (re-runs never duplicate). Returns the file written."""
    if not _SOURCE.match(name):
        raise IngestError(f"invalid record name {name!r}")
    target = partition_dir(home, table, source, partition) / f"{name}.parquet"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{name}.{uuid.uuid4().hex[:12]}.partial"
    try:
        pq.write_table(to_arrow(table, df), tmp, compression="zstd")
        os.replace(tmp, target)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return target


def land_quarantine(home: Path, source: str, partition: str, df: pl.DataFrame) -> Path | None:
    """Replace the quarantine partition of a source with `df` (columns x_source, x_source_file,
    x_line_number, reason, raw). An empty frame removes the partition (nothing rejected now);
    returns the file written or None."""
    target = partition_dir(home, QUARANTINE_TABLE, source, partition)
    if df.height == 0:
        if target.exists():
            _cleanup_leftovers(target.parent, partition)
            old = target.parent / f".old-{partition}-{uuid.uuid4().hex[:12]}"
            os.replace(target, old)
            shutil.rmtree(old, ignore_errors=True)
        return None
    return _write_partition(target, to_arrow(QUARANTINE_TABLE, df))[0]


def write_schema_files(home: Path) -> list[Path]:
    """Write `raw/<table>/_schema/part-0.parquet` (an empty file with the table's schema) for
    every landing table, so dbt can read a table that no configured source fills."""
    written = []
    for table, schema in SCHEMAS.items():
        d = Path(home) / "raw" / table / "_schema"
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".part-0.parquet.{uuid.uuid4().hex[:8]}.partial"
        pq.write_table(pa.table([pa.array([], type=f.type) for f in schema], schema=schema), tmp)
        os.replace(tmp, d / "part-0.parquet")
        written.append(d / "part-0.parquet")
    return written
