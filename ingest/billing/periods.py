"""The billing-period landing strategy: the billing kinds read whole and split by billing
period — `gcp_billing` (export files or `bigquery://` tables), `focus`, `azure_cost`,
`oci_cost` (their specs: ingest/billing/kinds.py).

Billing periods: every period (`period=YYYY-MM`) that holds a requested day is landed, plus every
period holding rows whose usage starts on a requested UTC day (a GCP invoice month is a Pacific
month; a FOCUS line of 30 September can be billed in October). Each landed period is replaced
whole, from all the files of the source: rows, rejected rows (`raw/quarantine/`) and the
source's own totals for it (`billing_source_totals`). Every file is read before anything is
landed, so a file that cannot be read (a missing mandatory column) fails the source and lands
nothing; a location matching no file fails it too. A period is kept as landed when the landing
guard refuses it (ingest/core/guards.py): a file now empty (or a header only) that landed rows
of the period came from, or more than `max_row_drop` fewer rows; a period the files hold no row
for any more is a gap, kept.

Source totals: each reader has a `ledger_file` that reads each row's period, currency and
amount from the file itself (csv module / JSON / pyarrow and Decimal), independently of the
mapping to the landing table; for BigQuery an aggregate query gives them. Per landed period and
currency they record `source_rows`, `source_total`, `quarantined_rows`, `quarantined_total`
and `unreadable_rows`; `ingest/core/quality.py` compares them with what landed.
"""

from __future__ import annotations

from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from ingest.billing.totals import LEDGER_SCHEMA, TOTALS_TABLE, source_totals
from ingest.core.common import ReadResult, expand
from ingest.core.errors import IngestError
from ingest.core.landing import land, land_quarantine, partition_dir
from ingest.core.partitions import DATE_PLACEHOLDER, no_files
from ingest.core.spec import LandContext, SourceTotals


def months_of(days: list[date]) -> list[str]:
    return sorted({d.strftime("%Y-%m") for d in days})


def _totals(ctx: LandContext) -> SourceTotals:
    if ctx.spec.totals is None or ctx.spec.read is None:
        raise IngestError(f"kind {ctx.spec.kind!r} is not a billing file kind")
    return ctx.spec.totals


# --------------------------------------------------------------------------- entry points


def land_billing_files(ctx: LandContext) -> None:
    """The billing-period strategy of the file kinds (focus, azure_cost, oci_cost, gcp_billing
    files): every file of the location is read, with its own totals, then the periods land."""
    totals = _totals(ctx)
    assert ctx.spec.read is not None
    source, location, report = ctx.source, ctx.location, ctx.report
    if "://" in location:
        raise IngestError(
            f"source {source.name}: remote locations are not supported for {source.kind}: "
            f"{location}"
        )
    options = ctx.options
    files = expand(location.replace(DATE_PLACEHOLDER, "*"))
    if not files:
        raise no_files(ctx, location)
    results = [ctx.spec.read(f, None, source.name, options) for f in files]
    ledger_options = {k: v for k, v in options.items() if k != "provider"}
    ledgers = [totals.ledger(f, ledger_options) for f in files]
    result = ReadResult.concat(ctx.table, results)
    ledger = pl.concat(ledgers) if ledgers else pl.DataFrame(schema=LEDGER_SCHEMA)
    report.files_read.extend(result.files)
    report.warnings.extend(result.warnings)
    land_periods(ctx, result, ledger, None)


def land_periods(
    ctx: LandContext, result: ReadResult, ledger: pl.DataFrame, aggregates: pl.DataFrame | None
) -> None:
    """Land every period that holds a requested day, or a row whose usage starts on one."""
    totals = _totals(ctx)
    touched: list[str] = []
    if result.rows.height:
        touched = (
            result.rows.filter(totals.usage_day().is_in(ctx.days))
            .select(totals.period().alias("p"))
            .unique()["p"]
            .drop_nulls()
            .to_list()
        )
    periods = sorted(set(months_of(ctx.days)) | set(touched))
    land_billing(ctx, totals, result, ledger, aggregates, periods)


# --------------------------------------------------------------------------- landing


def _majority(rows: pl.DataFrame) -> dict[str, str]:
    """Each file's most frequent period among its landed rows (ties: the earliest)."""
    if not rows.height:
        return {}
    per_file = (
        rows.group_by("x_source_file", "_part")
        .len()
        .drop_nulls("_part")
        .sort(["x_source_file", "len", "_part"], descending=[False, True, False])
        .unique("x_source_file", keep="first", maintain_order=True)
    )
    return {f: p for f, p, _ in per_file.iter_rows()}


def empty_files(result: ReadResult) -> list[str]:
    """The files read that gave no row at all, landed or quarantined (0 rows, or a header)."""
    seen = set(result.rows["x_source_file"].unique().to_list()) | set(
        result.quarantine["x_source_file"].unique().to_list()
    )
    return [f for f in result.files if f not in seen]


def _emptied_by(
    home: Path, table: str, source: str, partition: str, files: list[str]
) -> dict[str, int]:
    """Which of `files` (empty now) the landed rows of `partition` came from: file → rows."""
    path = partition_dir(home, table, source, partition) / "part-0.parquet"
    if not files or not path.is_file():
        return {}
    landed = (
        pl.read_parquet(path, columns=["x_source_file"])
        .filter(pl.col("x_source_file").is_in(files))
        .group_by("x_source_file")
        .len()
        .sort("x_source_file")
    )
    return {f: int(n) for f, n in landed.iter_rows()}


def land_billing(
    ctx: LandContext,
    spec: SourceTotals,
    result: ReadResult,
    ledger: pl.DataFrame,
    aggregates: pl.DataFrame | None,
    periods: list[str],
) -> None:
    """Land `periods` of `result` (rows, quarantine) and their source totals. A period is kept
    as landed when the guard refuses it (ingest/core/guards.py): an empty file that its landed
    rows came from, or a drop of more than `max_row_drop` of them."""
    home, table, source, report = ctx.home, ctx.table, ctx.source.name, ctx.report
    emptied = empty_files(result)
    rows = result.rows.with_columns(spec.period().alias("_part"))
    majority = _majority(rows)
    first = periods[0]

    def fallback(files: pl.Expr) -> pl.Expr:
        return files.replace_strict(majority, default=first, return_dtype=pl.String)

    keys = ["x_source_file", "x_line_number"]
    q = result.quarantine.join(
        ledger.select(*keys, pl.col("period").alias("_lp")), on=keys, how="left"
    ).with_columns(_part=pl.coalesce(pl.col("_lp"), fallback(pl.col("x_source_file"))))
    quarantined = q.select(*keys, pl.col("_part").alias("_qpart"))
    led = ledger.join(quarantined, on=keys, how="left").with_columns(
        _part=pl.coalesce(pl.col("period"), pl.col("_qpart"), fallback(pl.col("x_source_file"))),
        _quarantined=pl.col("_qpart").is_not_null(),
    )
    now = datetime.now(UTC)
    for period in periods:
        partition = f"period={period}"
        part_rows = rows.filter(pl.col("_part") == period).drop("_part")
        part_q = q.filter(pl.col("_part") == period).drop("_lp", "_part")
        culprits = _emptied_by(home, table, source, partition, emptied)
        named = ", ".join(f"{f} ({n} landed rows)" for f, n in culprits.items())
        if culprits and not ctx.guard.allow:
            ctx.guard.refuse(
                f"{partition}: files empty now (no rows, or a header only) held landed rows of "
                f"the period: {named}"
            )
            continue
        if culprits:
            report.warn(
                "shrink_allowed",
                f"--allow-shrink: {partition} replaced without the rows of {named}",
                "info",
                count=sum(culprits.values()),
            )
        if not ctx.guard.admit(
            home,
            table,
            partition,
            part_rows.height + part_q.height,
            report,
            reason=f"no rows for {partition}",
        ):
            continue
        land(home, table, source, partition, part_rows)
        land_quarantine(home, source, partition, part_q)
        totals = source_totals(
            led.filter(pl.col("_part") == period),
            None if aggregates is None else aggregates.filter(pl.col("period") == period),
            table=table,
            source=source,
            period=period,
            basis=spec.basis,
            computed_at=now,
        )
        land(home, TOTALS_TABLE, source, partition, totals)
        report.partitions.append(partition)
        report.rows_landed += part_rows.height
        report.rows_quarantined += part_q.height
    outside = rows.filter(~pl.col("_part").is_in(periods) | pl.col("_part").is_null()).height
    if outside:
        # landed when a run asks for their periods
        report.warn(
            "rows_outside_requested_days",
            f"{outside} rows outside the requested periods were not landed (a run over their "
            "days lands them)",
            "info",
            count=outside,
        )
    q_outside = q.filter(~pl.col("_part").is_in(periods)).height
    if q_outside:
        report.warn(
            "quarantine_outside_requested_days",
            f"{q_outside} rejected rows belong to periods not requested and were not landed",
            "info",
            count=q_outside,
        )
