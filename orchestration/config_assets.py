"""The config as landing tables (inventory, teams, rate cards, settings) for dbt."""

from datetime import date

from dagster import AssetExecutionContext, AssetKey, AssetsDefinition, MaterializeResult, asset

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.findings import IngestFinding
from ingest.core.findings_landing import (
    CONFIG_FINDINGS_SOURCE,
    LANDING_FINDINGS_SOURCE,
    land_ingest_findings,
)
from ingest.core.landing import recover_crashed_writes
from orchestration.partitions import SINGLE_RUN, partitions_for
from orchestration.resources import FleetResource

CONFIG_TABLES_KEY = AssetKey(["raw", "config_tables"])


def config_assets(cfg: Config | None) -> list[AssetsDefinition]:
    if cfg is None:
        return []
    partitions = partitions_for(cfg)

    # Partitioned like everything else so that a run over a range holds one partitions
    # definition; the tables are rewritten whole from the current config on every run.
    @asset(
        key=CONFIG_TABLES_KEY,
        group_name="config",
        partitions_def=partitions,
        backfill_policy=SINGLE_RUN,
        kinds={"python", "parquet"},
        description="fleetledger.yml (inventory, teams, rate cards, settings) landed as "
        "`raw/config_*` Parquet tables for dbt.",
    )
    def config_tables(context: AssetExecutionContext, fleet: FleetResource) -> MaterializeResult:
        cfg = fleet.load_config()
        write_config_tables(cfg, fleet.home_path)
        # what loading found (deprecated forms) reaches fct_data_health and the console
        land_ingest_findings(
            fleet.home_path, CONFIG_FINDINGS_SOURCE, context.run.run_id, cfg.findings
        )
        for finding in cfg.findings:
            context.log.warning(f"config: {finding.check}: {finding.message}")
        # partitions an earlier version's crashed write left doubled, of every source (a
        # source's own ingest settles its own first when it runs first): settled before dbt
        # reads the landing zone, and reported the same way
        settled = [
            IngestFinding("crashed_write", message)
            for message in recover_crashed_writes(fleet.home_path)
        ]
        land_ingest_findings(fleet.home_path, LANDING_FINDINGS_SOURCE, context.run.run_id, settled)
        for finding in settled:
            context.log.warning(f"landing zone: {finding.message}")
        key_range = context.partition_key_range
        days = partitions.get_partition_keys_in_range(key_range)
        record_accounted_days(fleet.home_path, [date.fromisoformat(d) for d in days])
        return MaterializeResult(
            metadata={
                "sources": len(cfg.sources),
                "inventory_nodes": len(cfg.inventory),
                "teams": len(cfg.teams),
                "rate_cards": len(cfg.rate_cards),
                "budgets": len(cfg.budgets),
                "accounted_days": len(days),
            }
        )

    return [config_tables]
