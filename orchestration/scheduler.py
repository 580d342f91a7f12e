"""Scheduler feeds: Slurm sacct, Kubernetes pods and GPU requests, Kueue workloads, job log
checkpoint markers (`run_logs`), with their landing checks beside them
(orchestration/quality_telemetry.py)."""

from __future__ import annotations

from dagster import AssetsDefinition

from fleetledger.config import SCHEDULER_KINDS, Config
from orchestration.ingest_assets import build_ingest_assets
from orchestration.quality_telemetry import quality_checks

GROUP = "scheduler"
KINDS = SCHEDULER_KINDS


def scheduler_assets(cfg: Config | None) -> list[AssetsDefinition]:
    return [*build_ingest_assets(cfg, KINDS, GROUP), *quality_checks(cfg, KINDS)]
