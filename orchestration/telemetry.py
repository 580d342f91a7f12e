"""Telemetry feeds: DCGM GPU metrics, facility power meters and node GPU power rollups, with
their landing checks beside them (orchestration/quality_telemetry.py)."""

from __future__ import annotations

from dagster import AssetsDefinition

from fleetledger.config import TELEMETRY_KINDS, Config
from orchestration.ingest_assets import build_ingest_assets
from orchestration.quality_telemetry import quality_checks

GROUP = "telemetry"
KINDS = TELEMETRY_KINDS


def telemetry_assets(cfg: Config | None) -> list[AssetsDefinition]:
    return [*build_ingest_assets(cfg, KINDS, GROUP), *quality_checks(cfg, KINDS)]
