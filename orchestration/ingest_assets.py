"""The ingest assets: one per configured source, in the group its kind's spec names.

Each asset is a thin wrapper around `ingest.registry.ingest_source`; what it knows about the
source's kind (group, landing table) comes from the kind registry (ingest/registry.py). The
asset is daily partitioned with a single-run backfill policy, so a range of days is one call
with the whole list of days.

A source that cannot be reached (`SourceUnavailable`: its store kept failing after every retry,
or its location matches no file) fails only its own asset, and not in a way that holds the
warehouse back: the asset keeps what the source landed before, records the days it owes
(ingest/core/missed.py) and reports its `source_available` check failed (severity ERROR, not
blocking) with the source, location, last error and attempts, and an `error` finding. dbt and
publish go on with every other source; `fleetledger run` exits non-zero naming the source. The
source's next run lands the owed days too.

Every finding of the ingest (warnings, quarantined rows by reason) is landed for its source and
Dagster run (`raw/ingest_findings/`, ingest/core/findings_landing.py), so dbt adds it to
`fct_data_health`; the asset's metadata counts them by severity.
"""

from collections import Counter
from collections.abc import Mapping
from dataclasses import fields, is_dataclass
from datetime import date
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckResult,
    AssetCheckSeverity,
    AssetCheckSpec,
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    DailyPartitionsDefinition,
    MaterializeResult,
    MetadataValue,
    asset,
)

from fleetledger.config import Config, Source
from fleetledger.config_warehouse import warehouse_env
from ingest import registry
from ingest.core.errors import SourceUnavailable
from ingest.core.findings import SEVERITIES, IngestFinding
from ingest.core.findings_landing import land_ingest_findings, report_findings
from ingest.core.guards import ALLOW_SHRINK_TAG
from ingest.core.missed import clear_missed, record_missed, with_missed
from ingest.core.report import IngestReport
from orchestration.partitions import DAILY, SINGLE_RUN, days_in_range, first_day, partitions_for
from orchestration.resources import FleetResource

#: the check of every ingest asset that fails when its source could not be reached
SOURCE_AVAILABLE_CHECK = "source_available"
#: the `error` finding of a source that could not be read
UNAVAILABLE_FINDING = "source_unavailable"


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


def allowed_to_shrink(tags: Mapping[str, str]) -> set[str]:
    """The sources a run lets lose landed rows: its `fleetledger/allow_shrink` tag (set by
    `fleetledger run --allow-shrink NAME`, or by hand on a run launched from the UI)."""
    return {n.strip() for n in tags.get(ALLOW_SHRINK_TAG, "").split(",") if n.strip()}


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


def _land_findings(
    context: AssetExecutionContext, home: Path, source: Source, report: IngestReport
) -> list[IngestFinding]:
    """Land the report's findings for the run (fct_data_health reads them) and log them."""
    findings = report_findings(home, report)
    land_ingest_findings(home, source.name, context.run.run_id, findings, location=source.location)
    for finding in findings:
        log = context.log.info if finding.severity == "info" else context.log.warning
        log(f"{source.name}: {finding.severity} {finding.check}: {finding}")
    return findings


def build_ingest_asset(
    source: Source, partitions: DailyPartitionsDefinition = DAILY
) -> AssetsDefinition:
    spec = registry.spec_for(source.kind)
    table = spec.table_for(source.options)
    key = raw_asset_key(source.name)

    @asset(
        key=key,
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
        check_specs=[
            AssetCheckSpec(
                SOURCE_AVAILABLE_CHECK,
                asset=key,
                description="The source's location could be read (fails, naming the location, "
                "the last error and the attempts, when it could not; its landed data is kept).",
            )
        ],
    )
    def _ingest(context: AssetExecutionContext, fleet: FleetResource) -> MaterializeResult:
        cfg = fleet.load_config()
        src = cfg.source(source.name)
        key_range = context.partition_key_range
        home = fleet.home_path
        asked = days_in_range(key_range.start, key_range.end)
        days = with_missed(home, src.name, asked, first_day(partitions))
        context.log.info(f"ingesting {src.name} ({src.kind}) for {asked[0]}..{asked[-1]}")
        owed = sorted(set(days) - set(asked))
        if owed:
            context.log.info(f"{src.name}: also the {len(owed)} days an earlier run missed")
        allow = src.name in allowed_to_shrink(context.run.tags)
        if allow:
            context.log.warning(f"{src.name}: --allow-shrink: landed rows may be removed")
        try:
            with warehouse_env(cfg.warehouse):
                report = registry.ingest_source(cfg, src, days, home, allow_shrink=allow)
        except SourceUnavailable as err:
            return _unavailable(context, src, days, err, home)
        clear_missed(home, src.name)
        findings = _land_findings(context, home, src, report)
        metadata = {**_report_metadata(report), **_findings_metadata(findings)}
        if owed:
            metadata["caught_up_days"] = MetadataValue.md("\n".join(f"- {d}" for d in owed))
        return MaterializeResult(
            metadata=metadata,
            check_results=[
                AssetCheckResult(
                    check_name=SOURCE_AVAILABLE_CHECK,
                    passed=True,
                    description=f"{src.location} read",
                )
            ],
        )

    return _ingest


def unavailable_message(source: Source, err: SourceUnavailable) -> str:
    return (
        f"source {source.name} ({source.kind}, location {source.location}) is unavailable: "
        f"{err}; its landed data was kept, and its next run lands the days this one missed"
    )


def _unavailable(
    context: AssetExecutionContext,
    source: Source,
    days: list[date],
    err: SourceUnavailable,
    home: Path,
) -> MaterializeResult:
    """The source could not be read: keep what it landed, owe the days, fail its check. The
    report holds one `error` finding (`source_unavailable`) counting the days owed."""
    message = unavailable_message(source, err)
    missed = record_missed(home, source.name, days, str(err))
    context.log.error(message)
    report = IngestReport(source=source.name, kind=source.kind, table=registry.source_table(source))
    report.warn(UNAVAILABLE_FINDING, message, "error", count=len(missed.days))
    findings = _land_findings(context, home, source, report)
    return MaterializeResult(
        metadata={
            **_report_metadata(report),
            **_findings_metadata(findings),
            "status": MetadataValue.text("unavailable"),
            "error": MetadataValue.text(message),
            "attempts": err.attempts or 0,
            "missed_days": len(missed.days),
        },
        check_results=[
            AssetCheckResult(
                check_name=SOURCE_AVAILABLE_CHECK,
                passed=False,
                severity=AssetCheckSeverity.ERROR,
                description=message,
                metadata={
                    "missed_days": MetadataValue.md("\n".join(f"- {d}" for d in missed.days)),
                    "attempts": err.attempts or 0,
                },
            )
        ],
    )


def build_ingest_assets(cfg: Config | None) -> list[AssetsDefinition]:
    """One asset per configured source, in its kind's group (billing, telemetry, scheduler)."""
    if cfg is None:
        return []
    partitions = partitions_for(cfg)
    return [build_ingest_asset(s, partitions) for s in cfg.sources]
