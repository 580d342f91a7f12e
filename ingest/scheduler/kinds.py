"""The scheduler source kinds: Slurm (sacct, node events), Kubernetes (pod dumps,
kube-state-metrics GPU requests), Kueue workloads and job log checkpoint markers.

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
from ingest.core.spec import KindOptions, KindSpec
from ingest.scheduler.kubernetes import read_pods
from ingest.scheduler.kubernetes_ksm import read_ksm
from ingest.scheduler.kueue import read_workloads
from ingest.scheduler.landing import land_run_logs, land_slurm
from ingest.scheduler.run_logs import OPTIONS as RUN_LOG_OPTIONS
from ingest.scheduler.slurm import read_sacct
from ingest.scheduler.tables import TABLES

#: the telemetry and scheduler suites register when quality_landed loads
SUITE_TABLES = quality_landed.TABLES


def _read_sacct(path: Path, day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return read_sacct(path, source=source, options=options, snapshot_date=day)


def _slurm_day(_table: str) -> pl.Expr:
    return pl.coalesce(
        pl.col("x_snapshot_date"), pl.col("start").dt.date(), pl.col("submit").dt.date()
    )


def _read_kubernetes(
    path: Path, _day: date | None, source: str, options: dict[str, Any]
) -> ReadResult:
    if options.get("format") == "kube_state_metrics":
        return read_ksm(path, source=source, options=options)
    return read_pods(path, source=source, options=options)


def _kubernetes_day(table: str) -> pl.Expr:
    if table == "k8s_gpu_requests":
        return pl.col("time").dt.date()
    return pl.col("snapshot_at").dt.date()


def _read_kueue(path: Path, _day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return read_workloads(path, source=source, options=options)


def _snapshot_day(_table: str) -> pl.Expr:
    return pl.col("snapshot_at").dt.date()


#: the options each scheduler kind's readers accept (docs/config.md, "Source options")
SLURM_OPTIONS = KindOptions(
    common=(
        # sacct files and the node events
        "cluster",
        "delimiter",
        "columns",
        "timezone",
        "snapshot_date",
        "snapshot_at",
        "max_run_hours",
        "encoding",
        "events",
        # the sacct command (`command: true` or a sacct:// location)
        "command",
        "sacct",
        "args",
        "extra_args",
        "timeout_s",
    ),
)
KUBERNETES_OPTIONS = KindOptions(
    common=("cluster",),
    formats={
        "pods": ("snapshot_at", "encoding"),
        "kube_state_metrics": ("scrape_time", "metric", "resource"),
    },
    default_format="pods",
)
KUEUE_OPTIONS = KindOptions(common=("cluster", "snapshot_at", "gpu_resource", "encoding"))
RUN_LOGS_OPTIONS = KindOptions(common=RUN_LOG_OPTIONS)

SLURM = KindSpec(
    kind="slurm",
    group="scheduler",
    description="Slurm sacct allocations (files or the sacct command) and sacctmgr node events",
    tables={"slurm_jobs": TABLES["slurm_jobs"], "slurm_node_events": TABLES["slurm_node_events"]},
    read=_read_sacct,
    land=land_slurm,
    day=_slurm_day,
    suite="warning",
    options=SLURM_OPTIONS,
)

KUBERNETES = KindSpec(
    kind="kubernetes",
    group="scheduler",
    description="Kubernetes pod dumps (kubectl get pods -o json) or kube-state-metrics scrapes",
    tables={"k8s_pods": TABLES["k8s_pods"], "k8s_gpu_requests": TABLES["k8s_gpu_requests"]},
    read=_read_kubernetes,
    land=land_files,
    day=_kubernetes_day,
    format_tables={"kube_state_metrics": "k8s_gpu_requests"},
    suite="warning",
    options=KUBERNETES_OPTIONS,
)

KUEUE = KindSpec(
    kind="kueue",
    group="scheduler",
    description="Kueue Workload objects (kubectl get workloads -o json)",
    tables={"kueue_workloads": TABLES["kueue_workloads"]},
    read=_read_kueue,
    land=land_files,
    day=_snapshot_day,
    suite="warning",
    options=KUEUE_OPTIONS,
)

RUN_LOGS = KindSpec(
    kind="run_logs",
    group="scheduler",
    description="job log files: checkpoint markers, for the work a failed run lost",
    tables={"run_log_checkpoints": TABLES["run_log_checkpoints"]},
    land=land_run_logs,
    suite="warning",
    options=RUN_LOGS_OPTIONS,
)

SPECS = (SLURM, KUBERNETES, KUEUE, RUN_LOGS)
