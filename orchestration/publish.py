"""Publish the built warehouse as the read-only snapshot consumers read."""

from collections.abc import Sequence

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from fleetledger.publish import publish_warehouse
from orchestration.partitions import DAILY, SINGLE_RUN
from orchestration.resources import FleetResource

WAREHOUSE_SNAPSHOT_KEY = AssetKey("warehouse_snapshot")


def publish_assets(upstream: Sequence[AssetKey]) -> list[AssetsDefinition]:
    @asset(
        key=WAREHOUSE_SNAPSHOT_KEY,
        deps=list(upstream),
        group_name="publish",
        partitions_def=DAILY,
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
        return MaterializeResult(
            metadata={
                "path": MetadataValue.path(str(result.path)),
                "size_bytes": result.size_bytes,
                **{f"rows/{table}": n for table, n in result.row_counts.items()},
            }
        )

    return [warehouse_snapshot]
