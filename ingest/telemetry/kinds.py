"""The telemetry source kinds: DCGM GPU metrics, vLLM serving metrics (`inference_metrics`) and
power (facility meters, node GPU rollups).

Each `KindSpec` (ingest/core/spec.py) says which tables a kind lands, how it reads and lands
them, and how its landing is checked; `ingest/registry.py` lists every domain's specs.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core import quality_landed
from ingest.core.common import ReadResult
from ingest.core.partitions import land_files
from ingest.core.spec import KindOptions, KindSpec, LandContext
from ingest.telemetry.dcgm import TEXT_FORMATS
from ingest.telemetry.dcgm_formats import read_dcgm
from ingest.telemetry.dcgm_prometheus import land_prometheus
from ingest.telemetry.power import FORMAT_TABLES as POWER_FORMATS
from ingest.telemetry.power import read_power
from ingest.telemetry.tables import TABLES
from ingest.telemetry.vllm import FILE_FORMATS as INFERENCE_FORMATS
from ingest.telemetry.vllm import land_inference_prometheus, read_inference

#: the telemetry and scheduler suites register when quality_landed loads
SUITE_TABLES = quality_landed.TABLES


def _sample_day(_table: str) -> pl.Expr:
    return pl.col("time").dt.date()


def _read_dcgm(path: Path, day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return read_dcgm(path, source=source, options=options, day=day)


def _land_dcgm(ctx: LandContext) -> None:
    if ctx.source.options.get("format") == "prometheus_api":
        land_prometheus(ctx)
    else:
        land_files(ctx)


def _read_inference(
    path: Path, day: date | None, source: str, options: dict[str, Any]
) -> ReadResult:
    return read_inference(path, source=source, options=options, day=day)


def _land_inference(ctx: LandContext) -> None:
    if ctx.source.options.get("format") == "prometheus_api":
        land_inference_prometheus(ctx)
    else:
        land_files(ctx)


def _read_power(path: Path, _day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return read_power(path, source=source, options=options)


#: the options each DCGM format's reader accepts (docs/config.md, "Source options")
DCGM_OPTIONS = KindOptions(
    # the plausibility limits of every format (ingest/telemetry/dcgm_checks.py)
    common=("day_slack_seconds", "max_power_w"),
    formats={
        **{f: ("scrape_time", "node_label") for f in TEXT_FORMATS},
        "prometheus_range_json": ("node_label",),
        "long_csv": ("node_label", "timezone"),
        "long_parquet": ("node_label", "timezone"),
        "nvidia_smi_csv": ("host", "timezone"),
        "prometheus_api": (
            "metrics",
            "selector",
            "chunk_seconds",
            "node_label",
            "timeout_seconds",
            "retries",
            "bearer_token",
            "resume",
        ),
    },
    default_format="prometheus_text",
)
#: the options of each vLLM metrics format (docs/config.md, "Source options")
INFERENCE_OPTIONS = KindOptions(
    common=("day_slack_seconds", "node_label"),
    formats={
        **{f: ("scrape_time",) for f in TEXT_FORMATS},
        **{f: () for f in INFERENCE_FORMATS if f not in TEXT_FORMATS},
        "prometheus_api": (
            "metrics",
            "selector",
            "chunk_seconds",
            "timeout_seconds",
            "retries",
            "bearer_token",
            "resume",
        ),
    },
    default_format="prometheus_text",
)
POWER_OPTIONS = KindOptions(
    common=("timezone",),
    formats={
        f: ("delimiter", "columns", "interval_seconds") if f == "node_gpu_rollup" else ()
        for f in POWER_FORMATS
    },
    default_format="meter_csv",
)

DCGM = KindSpec(
    kind="dcgm",
    group="telemetry",
    description="NVIDIA DCGM GPU metrics: exporter scrapes, Prometheus, long exports, nvidia-smi",
    tables={"dcgm_samples": TABLES["dcgm_samples"]},
    read=_read_dcgm,
    land=_land_dcgm,
    day=_sample_day,
    suite="warning",
    # a sample: its series (every label, `hpc_job` and pod included: shared GPUs keep one
    # sample per job) and time
    unique_key=tuple(c for c, _ in TABLES["dcgm_samples"] if c != "value"),
    options=DCGM_OPTIONS,
)

INFERENCE = KindSpec(
    kind="inference_metrics",
    group="telemetry",
    description="vLLM serving metrics (tokens, requests, latency histograms, queue and KV "
    "cache gauges): scrapes, Prometheus API responses, live Prometheus",
    tables={"inference_samples": TABLES["inference_samples"]},
    read=_read_inference,
    land=_land_inference,
    day=_sample_day,
    suite="warning",
    # a sample: its series (every label) and time
    unique_key=tuple(c for c, _ in TABLES["inference_samples"] if c != "value"),
    options=INFERENCE_OPTIONS,
)

POWER = KindSpec(
    kind="power",
    group="telemetry",
    description="facility and IT power meter readings, or node GPU power rollups",
    tables={
        "power_readings": TABLES["power_readings"],
        "node_gpu_power_hourly": TABLES["node_gpu_power_hourly"],
    },
    read=_read_power,
    land=land_files,
    day=_sample_day,
    format_tables={"node_gpu_rollup": "node_gpu_power_hourly"},
    suite="warning",
    options=POWER_OPTIONS,
)

SPECS = (DCGM, INFERENCE, POWER)
