"""The ingest assets: one per configured source, in the group its kind's spec names.

Each asset is a thin wrapper around `ingest.registry.ingest_source`; what it knows about the
source's kind (group, landing table) comes from the kind registry (ingest/registry.py). The
asset is daily partitioned with a single-run backfill policy, so a range of days is one call
with the whole list of days.
"""

from collections.abc import Mapping
from dataclasses import asdict, is_dataclass
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from fleetledger.config import Config, Source
from ingest import registry
from ingest.core.guards import ALLOW_SHRINK_TAG
from orchestration.partitions import DAILY, SINGLE_RUN, days_in_range, partitions_for
from orchestration.resources import FleetResource


def kinds_landing(table: str) -> set[str]:
    """The source kinds whose ingest lands `table` (ingest/registry.py)."""
    return {spec.kind for spec in registry.specs() if table in spec.tables}


def source_landing_table(source: Source) -> str:
    """The landing table of a configured source: its format's when that has its own."""
    return registry.source_table(source)


def raw_asset_key(source_name: str) -> AssetKey:
    return AssetKey(["raw", source_name])


def _report_metadata(report: Any) -> dict[str, Any]:
    """The IngestReport numbers as Dagster metadata (counts as ints, lists as counts + text)."""
    fields = asdict(report) if is_dataclass(report) else dict(vars(report))
    meta: dict[str, Any] = {}
    for name, value in fields.items():
        if isinstance(value, bool) or value is None:
            meta[name] = MetadataValue.text(str(value))
        elif isinstance(value, int | float):
            meta[name] = value
        elif isinstance(value, list | tuple | set | frozenset):
            items = [str(v) for v in value]
            meta[f"{name}_count"] = len(items)
            if items:
                shown = items[:50] + ([f"... {len(items) - 50} more"] if len(items) > 50 else [])
                meta[name] = MetadataValue.md("\n".join(f"- `{i}`" for i in shown))
        else:
            meta[name] = MetadataValue.text(str(value))
    summary = getattr(report, "summary", None)
    if callable(summary):
        meta["summary"] = MetadataValue.text(str(summary()))
    return meta


def allowed_to_shrink(tags: Mapping[str, str]) -> set[str]:
    """The sources a run lets lose landed rows: its `fleetledger/allow_shrink` tag (set by
    `fleetledger run --allow-shrink NAME`, or by hand on a run launched from the UI)."""
    return {n.strip() for n in tags.get(ALLOW_SHRINK_TAG, "").split(",") if n.strip()}


def build_ingest_asset(
    source: Source, partitions: DailyPartitionsDefinition = DAILY
) -> AssetsDefinition:
    spec = registry.spec_for(source.kind)
    table = spec.table_for(source.options)

    @asset(
        key=raw_asset_key(source.name),
        group_name=spec.group,
        partitions_def=partitions,
        backfill_policy=SINGLE_RUN,
        kinds={"python", "parquet"},
        tags={"fleetledger/source_kind": source.kind},
        description=(
            f"Source `{source.name}` (kind `{source.kind}`) read from `{source.location}` and "
            f"landed in `raw/{table}/{source.name}/`."
        ),
        metadata={"kind": source.kind, "table": table, "location": source.location},
    )
    def _ingest(context: AssetExecutionContext, fleet: FleetResource) -> MaterializeResult:
        cfg = fleet.load_config()
        src = cfg.source(source.name)
        key_range = context.partition_key_range
        days = days_in_range(key_range.start, key_range.end)
        context.log.info(f"ingesting {src.name} ({src.kind}) for {days[0]}..{days[-1]}")
        allow = src.name in allowed_to_shrink(context.run.tags)
        if allow:
            context.log.warning(f"{src.name}: --allow-shrink: landed rows may be removed")
        report = registry.ingest_source(cfg, src, days, fleet.home_path, allow_shrink=allow)
        for warning in getattr(report, "warnings", None) or []:
            context.log.warning(f"{src.name}: {warning}")
        return MaterializeResult(metadata=_report_metadata(report))

    return _ingest


def build_ingest_assets(cfg: Config | None) -> list[AssetsDefinition]:
    """One asset per configured source, in its kind's group (billing, telemetry, scheduler)."""
    if cfg is None:
        return []
    partitions = partitions_for(cfg)
    return [build_ingest_asset(s, partitions) for s in cfg.sources]
