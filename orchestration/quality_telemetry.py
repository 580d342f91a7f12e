"""Asset checks beside the telemetry and scheduler ingest assets: the landing table's Great
Expectations suite (ingest/core/quality_landed.py) on each day partition the run landed, with the
source's quarantined rows counted by reason in the check's metadata.

The check (`landing_expectations`) is not blocking: telemetry that breaks a range or arrives out
of order is reported (severity ERROR) without holding back the billing and cost marts of the
day; rows a reader could not use are already in quarantine and in `fct_quarantine`.
"""

import os
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    asset_check,
)

from fleetledger.config import Source
from ingest.core.quality_landed import quarantine_counts, validate_landed
from orchestration.ingest_assets import raw_asset_key
from orchestration.quality import landed_partitions, md_list, run_days
from orchestration.resources import FleetResource

CHECK_NAME = "landing_expectations"


def max_days() -> int:
    """How many of a run's day partitions the suite validates: the latest N (default 3).

    A daily run lands one day, so it is always validated whole; a 30-day backfill validates its
    latest days rather than spending minutes per source-day in Great Expectations. Set
    FLEETLEDGER_QUALITY_MAX_DAYS=0 to validate every partition of the run."""
    try:
        return max(0, int(os.environ.get("FLEETLEDGER_QUALITY_MAX_DAYS", "3")))
    except ValueError:
        return 3


def expectations_check(source: Source, table: str) -> AssetChecksDefinition:
    name = source.name

    @asset_check(
        asset=raw_asset_key(name),
        name=CHECK_NAME,
        blocking=False,
        description=(
            f"Great Expectations suite of `{table}` (columns, types, keys, value ranges, known "
            "states, monotonic time per series) on each day this run landed; quarantined rows "
            "counted by reason."
        ),
    )
    def _check(context: AssetCheckExecutionContext, fleet: FleetResource) -> AssetCheckResult:
        home = fleet.home_path
        partitions = landed_partitions(home, table, name, source.kind, run_days(context))
        limit = max_days()
        validated = partitions[-limit:] if limit else partitions
        results = [validate_landed(home, table, name, p) for p in validated]
        failed = [r for r in results if not r.passed]
        quarantined: dict[str, int] = {}
        for p in partitions:
            for reason, n in quarantine_counts(home, name, p).items():
                quarantined[reason] = quarantined.get(reason, 0) + n
        if not results:
            description = f"no landed partitions of {name} in {table} to check"
        elif failed:
            description = " | ".join(r.summary() for r in failed[:3])
        else:
            description = (
                f"{len(results)} partitions of {table} pass ({sum(r.rows for r in results)} "
                f"rows, {results[0].expectations} expectations each)"
            )
        if len(validated) < len(partitions):
            description += (
                f"; validated the latest {len(validated)} of {len(partitions)} day partitions"
                " (FLEETLEDGER_QUALITY_MAX_DAYS)"
            )
        if quarantined:
            description += f"; {sum(quarantined.values())} rows quarantined"
        metadata: dict[str, Any] = {
            "partitions": md_list(partitions),
            "validated_partitions": md_list(validated),
            "rows": sum(r.rows for r in results),
            "failed_partitions": len(failed),
            "failures": md_list(f"{r.partition}: {f}" for r in failed for f in r.failures),
            "quarantined_rows": sum(quarantined.values()),
            "quarantine_reasons": md_list(
                f"{n} × {reason}" for reason, n in sorted(quarantined.items(), key=lambda x: -x[1])
            ),
        }
        return AssetCheckResult(
            passed=not failed,
            severity=AssetCheckSeverity.ERROR,
            description=description,
            metadata=metadata,
        )

    return _check
