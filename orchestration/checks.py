"""The asset checks of every configured source, picked by its kind's spec (ingest/registry.py):

- suite `blocking` (billing): the landing's Great Expectations suite fails the run before dbt
  reads it, and kinds that record their own totals get the source-totals reconciliation
  (orchestration/quality.py);
- suite `warning` (telemetry, scheduler): the suite reports without holding the marts back
  (orchestration/quality_telemetry.py), for tables that have a registered suite.
"""

from __future__ import annotations

from dagster import AssetChecksDefinition

from fleetledger.config import Config
from ingest import registry
from ingest.core.quality import SUITES
from orchestration import quality, quality_telemetry


def source_checks(cfg: Config | None) -> list[AssetChecksDefinition]:
    if cfg is None:
        return []
    out: list[AssetChecksDefinition] = []
    for source in cfg.sources:
        spec = registry.spec_for(source.kind)
        table = spec.table_for(source.options)
        if spec.suite == "blocking":
            out += quality.landing_checks(source, table, totals=spec.records_totals)
        elif spec.suite == "warning" and table in SUITES:
            out.append(quality_telemetry.expectations_check(source, table))
    return out
