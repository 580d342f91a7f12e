"""Publish the built warehouse as the read-only snapshot consumers read."""

from collections.abc import Sequence
from datetime import UTC, datetime

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from fleetledger.data_health import record_run_findings, run_findings
from fleetledger.publish import publish_warehouse
from orchestration.partitions import DAILY, SINGLE_RUN
from orchestration.resources import FleetResource

WAREHOUSE_SNAPSHOT_KEY = AssetKey("warehouse_snapshot")


def publish_assets(
    upstream: Sequence[AssetKey], partitions: DailyPartitionsDefinition = DAILY
) -> list[AssetsDefinition]:
    @asset(
        key=WAREHOUSE_SNAPSHOT_KEY,
        deps=list(upstream),
        group_name="publish",
        partitions_def=partitions,
        backfill_policy=SINGLE_RUN,
        kinds={"duckdb"},
        description="`$FLEETLEDGER_HOME/warehouse.duckdb`: the built warehouse, swapped in "
        "atomically after every successful build; the app and notebooks read it.",
    )
    def warehouse_snapshot(
        context: AssetExecutionContext, fleet: FleetResource
    ) -> MaterializeResult:
        result = publish_warehouse(fleet.home_path)
        context.log.info(f"published {result.path} ({result.size_bytes} bytes)")
        findings = run_findings(result.path, context.run.run_id)
        record_run_findings(
            fleet.home_path, result.path, context.run.run_id, datetime.now(UTC).date()
        )
        for finding in findings:
            if finding.severity in ("warning", "data_loss", "error"):
                context.log.warning(f"data health: {finding}")
        return MaterializeResult(
            metadata={
                "path": MetadataValue.path(str(result.path)),
                "size_bytes": result.size_bytes,
                **{f"rows/{table}": n for table, n in result.row_counts.items()},
                "data_health_findings": len(findings),
            }
        )

    return [warehouse_snapshot]
