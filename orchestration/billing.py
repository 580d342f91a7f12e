"""Billing feeds (CUR, GCP billing export, FOCUS, Azure, OCI, list prices, rate cards), with the
asset checks beside them (orchestration/quality.py): each landing's Great Expectations suite and
the landed totals against the source's own."""

from __future__ import annotations

from dagster import AssetsDefinition

from fleetledger.config import BILLING_KINDS, Config
from orchestration.ingest_assets import build_ingest_assets
from orchestration.quality import billing_checks

GROUP = "billing"
KINDS = BILLING_KINDS | {"gcp_catalog", "rate_card"}


def billing_assets(cfg: Config | None) -> list[AssetsDefinition]:
    return [*build_ingest_assets(cfg, KINDS, GROUP), *billing_checks(cfg)]
