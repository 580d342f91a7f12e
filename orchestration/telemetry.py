"""Telemetry feeds: DCGM GPU metrics and facility power meters."""

from __future__ import annotations

from dagster import AssetsDefinition

from fleetledger.config import TELEMETRY_KINDS, Config
from orchestration.ingest_assets import build_ingest_assets

GROUP = "telemetry"
KINDS = TELEMETRY_KINDS


def telemetry_assets(cfg: Config | None) -> list[AssetsDefinition]:
    return build_ingest_assets(cfg, KINDS, GROUP)
