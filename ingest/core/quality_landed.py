"""Great Expectations suites of the telemetry and scheduler landings, declared with
`ingest/core/quality.py`: `dcgm_samples`, `inference_samples`, `power_readings`,
`node_gpu_power_hourly`, `slurm_jobs`, `k8s_pods`, `kueue_workloads`, `k8s_gpu_requests`,
`run_log_checkpoints`.

Every suite checks the landing schema's columns and their types, the keys that must be set, a
unique key, and the rules of its source:

- ranges: DCGM utilisation by metric — `DCGM_FI_DEV_GPU_UTIL` and `DCGM_FI_DEV_MEM_COPY_UTIL` in
  0–100, the `DCGM_FI_PROF_*` activity ratios in 0–1 (checked on derived columns that hold the
  value only for the metrics of each group: `prepare`) — power ≥ 0 (DCGM board power, meter kW,
  rollup W), rollup utilisation 0–100, GPU counts, elapsed times and eviction counts ≥ 0;
- known states: Slurm states (`ingest.scheduler.slurm_fields.STATES`), pod phases, meter
  kinds, the scheduler of a checkpoint marker;
- monotonic time per series: `prepare` adds `x_time_increasing` (each row's time is
  later than the previous landed row of its series, in landed order) before validating, and
  the suite expects it to be true. A series is a GPU metric (host, gpu, uuid, MIG instance,
  metric, hpc_job, pod), a vLLM series (every label column of inference_samples), a meter
  (site, meter), a rollup host, or a pod's GPU request.

Rows a reader rejected never reach these suites: they are in the source's quarantine partition
(`quarantine_counts` reads its reasons and counts for the checks' metadata).
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeVar

import polars as pl
import pyarrow as pa

from ingest.core.landing import SCHEMAS, partition_dir, polars_schema
from ingest.core.quality import (
    QualityResult,
    Suite,
    Within,
    partition_file,
    read_partition,
    register_suite,
    rule_columns,
    suite_for,
    validate_frame,
)
from ingest.scheduler.run_logs import SCHEDULERS
from ingest.scheduler.slurm import STATES
from ingest.telemetry.vllm_labels import SERIES_COLUMNS

#: DCGM metrics that are percentages (0–100) and ratios (0–1); FORMATS.md
PERCENT_METRICS = ("DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL")
RATIO_METRICS = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_PROF_SM_ACTIVE",
    "DCGM_FI_PROF_SM_OCCUPANCY",
    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP64_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP32_ACTIVE",
    "DCGM_FI_PROF_PIPE_FP16_ACTIVE",
    "DCGM_FI_PROF_DRAM_ACTIVE",
)
NON_NEGATIVE_METRICS = (
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_FB_FREE",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_MEM_CLOCK",
)
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
MONOTONIC = "x_time_increasing"

#: table → (time column, series key columns) for the monotonic-time rule
SERIES: dict[str, tuple[str, tuple[str, ...]]] = {
    "dcgm_samples": (
        "time",
        ("host", "gpu", "uuid", "mig_instance", "metric", "hpc_job", "namespace", "pod"),
    ),
    "inference_samples": ("time", SERIES_COLUMNS),
    "power_readings": ("time", ("site", "meter")),
    "node_gpu_power_hourly": ("time", ("host",)),
    "k8s_gpu_requests": ("time", ("namespace", "pod", "uid", "resource")),
}


def _family(t: pa.DataType) -> str:
    if pa.types.is_string(t):
        return "string"
    if pa.types.is_float64(t):
        return "float"
    if pa.types.is_int64(t):
        return "int"
    if pa.types.is_int32(t):
        return "int32"
    if pa.types.is_timestamp(t):
        return "timestamp"
    if pa.types.is_date32(t):
        return "date"
    if pa.types.is_list(t):
        return "list"
    raise TypeError(f"no type family for {t}")


def schema_columns(table: str) -> dict[str, str]:
    """Every column of a landing table with its type family (lineage included)."""
    return {f.name: _family(f.type) for f in SCHEMAS[table]}


#: derived columns of dcgm_samples: `value` where the metric is of the group, else null (a
#: plain range expectation on each is much cheaper than a row condition over the partition)
DCGM_VALUE_GROUPS: dict[str, tuple[tuple[str, ...], float | None, float | None]] = {
    "value_percent_metrics": (PERCENT_METRICS, 0, 100),
    "value_ratio_metrics": (RATIO_METRICS, 0, 1),
    "value_non_negative_metrics": (NON_NEGATIVE_METRICS, 0, None),
}


#: the monotonic-time flag `prepare` adds must be true on every row
_MONOTONIC = {MONOTONIC: (True,)}


_LINEAGE_SET = ("x_source", "x_source_file", "x_line_number")
_LINE_KEY = (("x_source_file", "x_line_number"),)

SUITES: tuple[Suite, ...] = (
    Suite(
        table="dcgm_samples",
        columns=schema_columns("dcgm_samples"),
        not_null=("time", "host", "metric", "value", *_LINEAGE_SET),
        ranges={
            "gpu": (0, None),
            **{col: (low, high) for col, (_, low, high) in DCGM_VALUE_GROUPS.items()},
        },
        value_sets=_MONOTONIC,
    ),
    Suite(
        table="inference_samples",
        columns=schema_columns("inference_samples"),
        not_null=("time", "metric", "value", *_LINEAGE_SET),
        # counters, histogram series and gauges are never negative (the reader quarantines
        # what is); kv_cache_usage_perc is a fraction (derived column: `prepare`)
        ranges={"value": (0, None), "value_kv_cache_usage": (0, 1)},
        value_sets=_MONOTONIC,
    ),
    Suite(
        table="power_readings",
        columns=schema_columns("power_readings"),
        not_null=("time", "site", "meter", "kind", "kw", *_LINEAGE_SET),
        unique=(("site", "meter", "time"),),
        ranges={"kw": (0, None)},
        value_sets={"kind": ("facility", "it"), **_MONOTONIC},
    ),
    Suite(
        table="node_gpu_power_hourly",
        columns=schema_columns("node_gpu_power_hourly"),
        not_null=("time", "host", "power_avg_w", "interval_seconds", *_LINEAGE_SET),
        unique=(("host", "time"),),
        ranges={
            "power_avg_w": (0, None),
            "power_min_w": (0, None),
            "power_max_w": (0, None),
            "util_avg": (0, 100),
            "util_min": (0, 100),
            "util_max": (0, 100),
            "gmem_avg": (0, 100),
            "gmem_min": (0, 100),
            "gmem_max": (0, 100),
            "interval_seconds": (1, None),
        },
        ordered=(
            ("power_max_w", "power_avg_w"),
            ("power_avg_w", "power_min_w"),
            ("util_max", "util_avg"),
            ("util_avg", "util_min"),
        ),
        value_sets=_MONOTONIC,
    ),
    Suite(
        table="slurm_jobs",
        columns=schema_columns("slurm_jobs"),
        not_null=("job_id", "state", "gpus", *_LINEAGE_SET),
        unique=_LINE_KEY,
        value_sets={"state": tuple(sorted(STATES))},
        ranges={
            "gpus": (0, None),
            "elapsed_seconds": (0, None),
            "nnodes": (0, None),
            "ncpus": (0, None),
            "step_count": (0, None),
        },
        ordered=(("end", "start"), ("start", "submit")),
    ),
    Suite(
        table="k8s_pods",
        columns=schema_columns("k8s_pods"),
        not_null=("uid", "namespace", "gpus", "snapshot_at", *_LINEAGE_SET),
        unique=(("x_source_file", "uid"),),
        ranges={"gpus": (0, None)},
        value_sets={"phase": POD_PHASES},
        ordered=(("finished_at", "started_at"),),
    ),
    Suite(
        table="kueue_workloads",
        columns=schema_columns("kueue_workloads"),
        not_null=(
            "uid",
            "pod_count",
            "gpus_requested",
            "evicted_count",
            "requeue_count",
            "snapshot_at",
            *_LINEAGE_SET,
        ),
        unique=(("x_source_file", "uid"),),
        ranges={
            "pod_count": (0, None),
            "gpus_requested": (0, None),
            "gpus_admitted": (0, None),
            "evicted_count": (0, None),
            "requeue_count": (0, None),
        },
        ordered=(("admitted_at", "created_at"), ("finished_at", "admitted_at")),
    ),
    Suite(
        table="k8s_gpu_requests",
        columns=schema_columns("k8s_gpu_requests"),
        not_null=("time", "namespace", "pod", "gpus", "containers", *_LINEAGE_SET),
        unique=(("time", "namespace", "pod", "uid", "resource"),),
        ranges={"gpus": (0, None), "containers": (1, None)},
        value_sets=_MONOTONIC,
    ),
    Suite(
        table="run_log_checkpoints",
        columns=schema_columns("run_log_checkpoints"),
        not_null=("scheduler", "cluster", "checkpoint_at", *_LINEAGE_SET),
        unique=_LINE_KEY,
        value_sets={"scheduler": SCHEDULERS},
        within=(Within("checkpoint_at"),),
    ),
)

for _suite in SUITES:
    register_suite(_suite)

TABLES = tuple(s.table for s in SUITES)
FrameT = TypeVar("FrameT", pl.DataFrame, pl.LazyFrame)


def prepare(df: FrameT, table: str) -> FrameT:
    """`df` with the derived columns its suite checks:

    - `x_time_increasing` (tables with series): whether each row's time is later than the
      previous row of its series in landed order (the first row of a series: true);
    - dcgm_samples: `value_percent_metrics`, `value_ratio_metrics`,
      `value_non_negative_metrics` — `value` where the row's metric is in the group, else null;
    - inference_samples: `value_kv_cache_usage` — `value` of vllm:kv_cache_usage_perc rows.
    """
    if table == "inference_samples":
        df = df.with_columns(
            value_kv_cache_usage=pl.when(pl.col("metric") == "vllm:kv_cache_usage_perc").then(
                pl.col("value")
            )
        )
    if table == "dcgm_samples":
        df = df.with_columns(
            pl.when(pl.col("metric").is_in(list(metrics))).then(pl.col("value")).alias(col)
            for col, (metrics, _, _) in DCGM_VALUE_GROUPS.items()
        )
    if table in SERIES:
        time_col, keys = SERIES[table]
        # later than the previous row of the series (one window over the series, not two),
        # the series told apart by the text columns' categorical codes (`read_partition`),
        # one to one with their values: 0.9 instead of 1.5 CPU s for a day of 1,024 GPUs
        step = pl.col(time_col).diff().over([pl.col(k).to_physical() for k in keys])
        df = df.with_columns((step > pl.duration(microseconds=0)).fill_null(True).alias(MONOTONIC))
    return df


#: the landed columns `prepare` derives rule columns from, besides the series' keys and time
PREPARE_READS: dict[str, tuple[str, ...]] = {
    "dcgm_samples": ("metric", "value"),
    "inference_samples": ("metric", "value"),
}


def landed_columns_read(table: str, partition: str | None) -> set[str]:
    """The columns of a landed partition whose values the checks read: the suite's rules' and
    what `prepare` derives its columns from (the others are checked on the schema only)."""
    read = rule_columns(suite_for(table), partition) | set(PREPARE_READS.get(table, ()))
    if table in SERIES:
        time_col, keys = SERIES[table]
        read |= {time_col, *keys}
    return read


def validate_landed(home: Path, table: str, source: str, partition: str) -> QualityResult:
    """Validate the landed partition `raw/<table>/<source>/<partition>/` against its suite
    (after adding the monotonic-time flag where the table has series)."""
    path = partition_file(home, table, source, partition)
    if path.exists():
        df = read_partition(path, suite_for(table), landed_columns_read(table, partition))
    else:
        df = pl.DataFrame(schema=_empty_schema(table))
    return validate_frame(prepare(df, table), table, partition, source=source)


def _empty_schema(table: str) -> pl.Schema:
    return polars_schema(table)


def quarantine_counts(home: Path, source: str, partition: str) -> dict[str, int]:
    """Rows in the source's quarantine partition, by reason (empty when nothing was
    rejected)."""
    path = partition_dir(home, "quarantine", source, partition) / "part-0.parquet"
    if not path.exists():
        return {}
    counts = pl.read_parquet(path, columns=["reason"]).group_by("reason").len().sort("reason")
    return {str(r): int(n) for r, n in counts.iter_rows()}
