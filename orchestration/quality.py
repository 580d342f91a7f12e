"""Asset checks beside the ingest assets: the landing table's Great Expectations suite on each
partition the run landed, and for billing sources the landed totals against the source's own.

- `landing_expectations` (blocking): `ingest.core.quality.validate_partition` on every partition of
  the source that the run's days touch (billing: the months of the days and the months next to
  them, where a run may land usage of a neighbouring invoice month; daily tables: the days;
  Cloud Catalog: the newest fetch). A failed expectation fails the run before dbt reads it.
- `source_totals_accounted` (blocking): per period, source file and currency, landed +
  quarantined == the source's own total. A reader that drops or alters money fails the run.
- `source_totals_match` (warning): landed == the source's own total; it fails, naming the
  amounts, when rows were quarantined.

`landing_checks(source, table, ...)` builds them for one source; orchestration/checks.py picks
them for every source whose kind's suite is `blocking` (ingest/registry.py).
"""

from collections.abc import Iterable
from datetime import date, timedelta
from pathlib import Path
from typing import Any

from dagster import (
    AssetCheckExecutionContext,
    AssetCheckResult,
    AssetChecksDefinition,
    AssetCheckSeverity,
    MetadataValue,
    asset_check,
)

from fleetledger.config import Source
from ingest.billing.reconcile import reconcile_totals
from ingest.core.landing import landed_partitions as landed_in
from ingest.core.quality import validate_partition
from orchestration.ingest_assets import raw_asset_key, source_landing_table
from orchestration.resources import FleetResource


def _month(d: date) -> date:
    return d.replace(day=1)


def _add_months(d: date, n: int) -> date:
    y, m = divmod(d.year * 12 + d.month - 1 + n, 12)
    return date(y, m + 1, 1)


def landed_partitions(
    home: Path, table: str, source: str, kind: str, days: tuple[date, date] | None
) -> list[str]:
    """The landed partitions of `source` in `table` that a run over `days` (first, last) may
    have written; every landed partition when `days` is None."""
    landed = landed_in(home, table, source)
    if kind == "gcp_catalog":
        return landed[-1:]
    if days is None:
        return landed
    first, last = days
    if any(p.startswith("period=") for p in landed):
        lo, hi = _add_months(_month(first), -1), _add_months(_month(last), 1)
        wanted = set()
        m = lo
        while m <= hi:
            wanted.add(f"period={m:%Y-%m}")
            m = _add_months(m, 1)
        return [p for p in landed if p in wanted]
    wanted_days = {f"date={first + timedelta(days=i)}" for i in range((last - first).days + 1)}
    return [p for p in landed if p in wanted_days]


def run_days(context: AssetCheckExecutionContext) -> tuple[date, date] | None:
    """The run's partition range as days; None when the run is not partitioned."""
    op = context.op_execution_context
    try:
        if not op.has_partition_key_range:
            return None
        key_range = op.partition_key_range
    except Exception:  # noqa: BLE001 - an unpartitioned run checks everything landed
        return None
    return date.fromisoformat(key_range.start), date.fromisoformat(key_range.end)


def md_list(items: Iterable[str], limit: int = 30) -> MetadataValue:
    items = list(items)
    shown = items[:limit] + ([f"... {len(items) - limit} more"] if len(items) > limit else [])
    return MetadataValue.md("\n".join(f"- {i}" for i in shown) or "(none)")


def expectations_check(source: Source, table: str) -> AssetChecksDefinition:
    name = source.name
    kind = source.kind

    @asset_check(
        asset=raw_asset_key(name),
        name="landing_expectations",
        blocking=True,
        description=(
            f"Great Expectations suite of `{table}` (columns, types, non-null keys, period "
            "bounds, currency codes, value ranges) on each partition this run landed."
        ),
    )
    def _check(context: AssetCheckExecutionContext, fleet: FleetResource) -> AssetCheckResult:
        home = fleet.home_path
        partitions = landed_partitions(home, table, name, kind, run_days(context))
        results = [validate_partition(home, table, name, p) for p in partitions]
        failed = [r for r in results if not r.passed]
        if not results:
            description = f"no landed partitions of {name} in {table} to check"
        elif failed:
            description = " | ".join(r.summary() for r in failed[:3])
        else:
            description = (
                f"{len(results)} partitions of {table} pass "
                f"({sum(r.rows for r in results)} rows, {results[0].expectations} expectations "
                "each)"
            )
        return AssetCheckResult(
            passed=not failed,
            severity=AssetCheckSeverity.ERROR,
            description=description,
            metadata={
                "partitions": md_list(p for p in partitions),
                "rows": sum(r.rows for r in results),
                "failed_partitions": len(failed),
                "failures": md_list(f"{r.partition}: {f}" for r in failed for f in r.failures),
            },
        )

    return _check


def totals_checks(source: Source, table: str) -> list[AssetChecksDefinition]:
    name = source.name
    kind = source.kind

    def run(context: AssetCheckExecutionContext, fleet: FleetResource) -> list[Any]:
        home = fleet.home_path
        partitions = landed_partitions(home, table, name, kind, run_days(context))
        return [reconcile_totals(home, table, name, p) for p in partitions]

    def metadata(results: list[Any]) -> dict[str, Any]:
        return {
            "partitions": md_list(r.partition for r in results),
            "groups": md_list(f"{r.partition}: {line}" for r in results for line in r.lines),
        }

    @asset_check(
        asset=raw_asset_key(name),
        name="source_totals_accounted",
        blocking=True,
        description=(
            "Per landed period, file and currency: landed + quarantined amounts equal the "
            "source's own total (nothing lost or altered on the way)."
        ),
    )
    def _accounted(context: AssetCheckExecutionContext, fleet: FleetResource) -> AssetCheckResult:
        results = run(context, fleet)
        bad = [r for r in results if not r.accounted]
        lines = [f"{r.partition}: {x}" for r in bad for x in r.lines if not x.accounted] + [
            r.summary() for r in bad if not r.recorded
        ]
        return AssetCheckResult(
            passed=not bad,
            severity=AssetCheckSeverity.ERROR,
            description=(
                "; ".join(lines[:5])
                if bad
                else f"landed + quarantined = source total in {len(results)} periods"
            ),
            metadata=metadata(results),
        )

    @asset_check(
        asset=raw_asset_key(name),
        name="source_totals_match",
        blocking=False,
        description=(
            "Per landed period, file and currency: the landed total equals the source file's "
            "own total (fails, naming the amounts, when rows were quarantined)."
        ),
    )
    def _match(context: AssetCheckExecutionContext, fleet: FleetResource) -> AssetCheckResult:
        results = run(context, fleet)
        bad = [r for r in results if not r.matches]
        return AssetCheckResult(
            passed=not bad,
            severity=AssetCheckSeverity.WARN,
            description=(
                " | ".join(r.summary() for r in bad[:3])
                if bad
                else f"landed totals equal the source's in {len(results)} periods"
            ),
            metadata=metadata(results),
        )

    return [_accounted, _match]


def landing_checks(
    source: Source, table: str | None = None, *, totals: bool = False
) -> list[AssetChecksDefinition]:
    """The checks of one configured source: its landing's suite, and with `totals` the
    source-totals reconciliation."""
    table = table or source_landing_table(source)
    checks = [expectations_check(source, table)]
    if totals:
        checks += totals_checks(source, table)
    return checks
