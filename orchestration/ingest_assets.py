"""The ingest assets: one per configured source, in the group its kind's spec names.

Each asset is a thin wrapper around `ingest.registry.ingest_source`; what it knows about the
source's kind (group, landing table) comes from the kind registry (ingest/registry.py). The
asset is daily partitioned with a single-run backfill policy, so a range of days is one call
with the whole list of days.

Every finding of the ingest (warnings, quarantined rows by reason) is landed for its source and
Dagster run (`raw/ingest_findings/`, ingest/core/findings_landing.py), so dbt adds it to
`fct_data_health`; the asset's metadata counts them by severity.
"""

from collections import Counter
from dataclasses import fields, is_dataclass
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
from ingest.core.findings import SEVERITIES, IngestFinding
from ingest.core.findings_landing import land_ingest_findings, report_findings
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
    values = (
        {f.name: getattr(report, f.name) for f in fields(report)}
        if is_dataclass(report)
        else dict(vars(report))
    )
    meta: dict[str, Any] = {}
    for name, value in values.items():
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


def _findings_metadata(findings: list[IngestFinding]) -> dict[str, Any]:
    """How many findings of each severity, and the findings themselves (at most 50)."""
    by_severity = Counter(f.severity for f in findings)
    meta: dict[str, Any] = {f"findings/{s}": by_severity.get(s, 0) for s in SEVERITIES}
    if findings:
        lines = [f"- {f.severity} `{f.check}`: {f.message}" for f in findings[:50]]
        if len(findings) > 50:
            lines.append(f"- ... {len(findings) - 50} more")
        meta["findings"] = MetadataValue.md("\n".join(lines))
    return meta


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
        report = registry.ingest_source(cfg, src, days, fleet.home_path)
        findings = report_findings(fleet.home_path, report)
        land_ingest_findings(
            fleet.home_path, src.name, context.run.run_id, findings, location=src.location
        )
        for finding in findings:
            log = context.log.info if finding.severity == "info" else context.log.warning
            log(f"{src.name}: {finding.severity} {finding.check}: {finding}")
        return MaterializeResult(
            metadata={**_report_metadata(report), **_findings_metadata(findings)}
        )

    return _ingest


def build_ingest_assets(cfg: Config | None) -> list[AssetsDefinition]:
    """One asset per configured source, in its kind's group (billing, telemetry, scheduler)."""
    if cfg is None:
        return []
    partitions = partitions_for(cfg)
    return [build_ingest_asset(s, partitions) for s in cfg.sources]
