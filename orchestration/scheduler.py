"""Scheduler feeds: Slurm sacct, Kubernetes pods, Kueue workloads."""

from __future__ import annotations

from dagster import AssetsDefinition

from fleetledger.config import SCHEDULER_KINDS, Config
from orchestration.ingest_assets import build_ingest_assets

GROUP = "scheduler"
KINDS = SCHEDULER_KINDS


def scheduler_assets(cfg: Config | None) -> list[AssetsDefinition]:
    return build_ingest_assets(cfg, KINDS, GROUP)
