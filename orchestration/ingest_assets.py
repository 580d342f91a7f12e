"""Asset factory shared by billing, telemetry and scheduler: one asset per configured source.

Each asset is a thin wrapper around `ingest.registry.ingest_source`; everything it knows about the
source's format lives in `ingest/`. The asset is daily partitioned with a single-run backfill
policy, so a range of days is one call with the whole list of days.
"""

from collections.abc import Iterable
from dataclasses import asdict, is_dataclass
from typing import Any

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from fleetledger.config import Config, Source
from orchestration.partitions import DAILY, SINGLE_RUN, days_in_range
from orchestration.resources import FleetResource

# landing table each source kind fills (docs/landing.md); dbt sources are `landing.<table>`
TABLE_BY_KIND: dict[str, str] = {
    "aws_cur": "aws_cur_lines",
    "gcp_billing": "gcp_billing_lines",
    "gcp_catalog": "gcp_catalog_skus",
    "focus": "focus_lines",
    "azure_cost": "azure_cost_lines",
    "oci_cost": "oci_cost_lines",
    "rate_card": "rate_card_lines",
    "dcgm": "dcgm_samples",
    "slurm": "slurm_jobs",
    "kubernetes": "k8s_pods",
    "kueue": "kueue_workloads",
    "power": "power_readings",
    "run_logs": "run_log_checkpoints",
}


# every landing table whose name starts with the prefix comes from sources of that kind
# (e.g. slurm lands slurm_jobs and slurm_node_events, aws_cur lands aws_cur_deliveries too)
TABLE_PREFIX_BY_KIND: dict[str, str] = {
    "aws_cur": "aws_cur_",
    "gcp_billing": "gcp_billing_",
    "gcp_catalog": "gcp_catalog_",
    "focus": "focus_",
    "azure_cost": "azure_cost_",
    "oci_cost": "oci_cost_",
    "rate_card": "rate_card_",
    "dcgm": "dcgm_",
    "slurm": "slurm_",
    "kubernetes": "k8s_",
    "kueue": "kueue_",
    "power": "power_",
    "run_logs": "run_log_",
}


def kinds_landing(table: str) -> set[str]:
    """The source kinds whose ingest lands `table` (also through an option `format` that lands
    a table of its own: `ingest.registry.FORMAT_TABLES`)."""
    kinds = {k for k in TABLE_PREFIX_BY_KIND if landing_table(k) == table}
    kinds |= {kind for (kind, _), t in _format_tables().items() if t == table}
    return kinds or {k for k, prefix in TABLE_PREFIX_BY_KIND.items() if table.startswith(prefix)}


def _format_tables() -> dict[tuple[str, str], str]:
    try:
        from ingest import registry
    except ImportError:
        return {}
    mapping = getattr(registry, "FORMAT_TABLES", None)
    return dict(mapping) if isinstance(mapping, dict) else {}


def source_landing_table(source: Source) -> str:
    """The landing table of a configured source: its format's when that has its own."""
    fmt = str(source.options.get("format"))
    return _format_tables().get((source.kind, fmt), landing_table(source.kind))


def raw_asset_key(source_name: str) -> AssetKey:
    return AssetKey(["raw", source_name])


def landing_table(kind: str) -> str:
    """The landing table of a source kind; `ingest.registry.KIND_TABLES` wins when it has it."""
    try:
        from ingest import registry

        mapping = getattr(registry, "KIND_TABLES", None)
        if isinstance(mapping, dict) and kind in mapping:
            return str(mapping[kind])
    except ImportError:
        pass
    return TABLE_BY_KIND.get(kind, kind)


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


def build_ingest_asset(source: Source, group: str) -> AssetsDefinition:
    table = source_landing_table(source)

    @asset(
        key=raw_asset_key(source.name),
        group_name=group,
        partitions_def=DAILY,
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
        from ingest.registry import ingest_source

        cfg = fleet.load_config()
        src = cfg.source(source.name)
        key_range = context.partition_key_range
        days = days_in_range(key_range.start, key_range.end)
        context.log.info(f"ingesting {src.name} ({src.kind}) for {days[0]}..{days[-1]}")
        report = ingest_source(cfg, src, days, fleet.home_path)
        for warning in getattr(report, "warnings", None) or []:
            context.log.warning(f"{src.name}: {warning}")
        return MaterializeResult(metadata=_report_metadata(report))

    return _ingest


def build_ingest_assets(
    cfg: Config | None, kinds: Iterable[str], group: str
) -> list[AssetsDefinition]:
    if cfg is None:
        return []
    wanted = set(kinds)
    return [build_ingest_asset(s, group) for s in cfg.sources if s.kind in wanted]
