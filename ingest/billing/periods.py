"""Land the billing kinds read whole and split by billing period — `gcp_billing` (export files
or `bigquery://` tables), `focus`, `azure_cost`, `oci_cost` — and the Cloud Catalog
(`gcp_catalog`). Called by `ingest.registry.ingest_source`.

Billing periods: every period (`period=YYYY-MM`) that holds a requested day is landed, plus every
period holding rows whose usage starts on a requested UTC day (a GCP invoice month is a Pacific
month; a FOCUS line of 30 September can be billed in October). Each landed period is replaced
whole, from all the files of the source: rows, rejected rows (`raw/quarantine/`) and the
source's own totals for it (`billing_source_totals`). Every file is read before anything is
landed, so a file that cannot be read (a missing mandatory column) fails the source and lands
nothing.

Source totals: each reader has a `ledger_file` that reads each row's period, currency and
amount from the file itself (csv module / JSON / pyarrow and Decimal), independently of the
mapping to the landing table; for BigQuery an aggregate query gives them. Per landed period and
currency they record `source_rows`, `source_total`, `quarantined_rows`, `quarantined_total`
and `unreadable_rows`; `ingest/core/quality.py` compares them with what landed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import polars as pl

from fleetledger.config import Config, Source
from ingest.core.common import ReadResult, expand
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, land, land_quarantine, polars_schema

if TYPE_CHECKING:
    from ingest.registry import IngestReport

TOTALS_TABLE = "billing_source_totals"
DATE_PLACEHOLDER = "{date}"
#: kinds this module lands, and their landing tables
KIND_TABLES = {
    "gcp_billing": "gcp_billing_lines",
    "focus": "focus_lines",
    "azure_cost": "focus_lines",
    "oci_cost": "focus_lines",
    "gcp_catalog": "gcp_catalog_skus",
}

_LEDGER_SCHEMA = {
    "x_source_file": pl.String,
    "x_line_number": pl.Int64,
    "period": pl.String,
    "currency": pl.String,
    "amount": pl.Float64,
}


FileReader = Callable[[Path, str, dict[str, Any]], ReadResult]
LedgerReader = Callable[[Path, dict[str, Any]], pl.DataFrame]


@dataclass(frozen=True)
class BillingKind:
    table: str
    read: FileReader
    ledger: LedgerReader
    basis: str
    period: Callable[[], pl.Expr]  # a landed row's period, YYYY-MM
    usage_day: Callable[[], pl.Expr]  # the UTC day a landed row's usage starts


def _gcp() -> BillingKind:
    from ingest.billing import gcp_billing as g

    return BillingKind(
        table="gcp_billing_lines",
        read=lambda p, s, o: g.read_gcp_billing_file(p, source=s, options=o),
        ledger=g.ledger_file,
        basis=g.TOTAL_BASIS,
        period=lambda: g.period_of(pl.col("invoice_month")),
        usage_day=lambda: pl.col("usage_start_time").dt.convert_time_zone("UTC").dt.date(),
    )


def _focus_kind(read: FileReader, ledger: LedgerReader, basis: str) -> BillingKind:
    return BillingKind(
        table="focus_lines",
        read=read,
        ledger=ledger,
        basis=basis,
        period=lambda: pl.col("x_billing_period"),
        usage_day=lambda: pl.col("ChargePeriodStart").dt.convert_time_zone("UTC").dt.date(),
    )


def billing_kind(kind: str) -> BillingKind:
    if kind == "gcp_billing":
        return _gcp()
    if kind == "focus":
        from ingest.billing import focus as f

        return _focus_kind(
            lambda p, s, o: f.read_focus_file(p, source=s, options=o), f.ledger_file, f.TOTAL_BASIS
        )
    if kind == "azure_cost":
        from ingest.billing import azure_cost as a

        return _focus_kind(
            lambda p, s, o: a.read_azure_cost(p, source=s, options=o), a.ledger_file, a.TOTAL_BASIS
        )
    if kind == "oci_cost":
        from ingest.billing import oci_cost as o

        return _focus_kind(
            lambda p, s, opts: o.read_oci_cost(p, source=s, options=opts),
            o.ledger_file,
            o.TOTAL_BASIS,
        )
    raise IngestError(f"kind {kind!r} is not a billing file kind")


def months_of(days: list[date]) -> list[str]:
    return sorted({d.strftime("%Y-%m") for d in days})


# --------------------------------------------------------------------------- entry point


def ingest_billing(
    cfg: Config, source: Source, location: str, days: list[date], home: Path, report: IngestReport
) -> None:
    """Land `source` (a kind of KIND_TABLES) for `days` under `home/raw/`."""
    kind = source.kind
    options = dict(source.options)
    if kind == "gcp_catalog":
        from ingest.billing.gcp_catalog import ingest_catalog

        ingest_catalog(source, location, home, report)
        return
    spec = billing_kind(kind)
    requested = months_of(days)
    if location.startswith("bigquery://"):
        if kind != "gcp_billing":
            raise IngestError(f"source {source.name}: bigquery:// locations are for gcp_billing")
        from ingest.billing.gcp_bigquery import invoice_months_for, read_bigquery

        bq = read_bigquery(location, source=source.name, months=invoice_months_for(days), **options)
        result, ledger, aggregates = bq.result, bq.ledger, bq.aggregates
        report.files_read.extend(result.files)
        report.warnings.extend(result.warnings)
    else:
        if "://" in location:
            raise IngestError(
                f"source {source.name}: remote locations are not supported for {kind}: {location}"
            )
        files = expand(location.replace(DATE_PLACEHOLDER, "*"))
        if not files:
            report.warnings.append(f"no files match {location}")
        results = [spec.read(f, source.name, options) for f in files]
        ledger_options = {k: v for k, v in options.items() if k != "provider"}
        ledgers = [spec.ledger(f, ledger_options) for f in files]
        result = ReadResult.concat(spec.table, results)
        ledger = pl.concat(ledgers) if ledgers else pl.DataFrame(schema=_LEDGER_SCHEMA)
        aggregates = None
        report.files_read.extend(result.files)
        report.warnings.extend(result.warnings)
    touched: list[str] = []
    if result.rows.height:
        touched = (
            result.rows.filter(spec.usage_day().is_in(days))
            .select(spec.period().alias("p"))
            .unique()["p"]
            .drop_nulls()
            .to_list()
        )
    periods = sorted(set(requested) | set(touched))
    land_billing(home, spec, source.name, result, ledger, aggregates, periods, report)


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


def land_billing(
    home: Path,
    spec: BillingKind,
    source: str,
    result: ReadResult,
    ledger: pl.DataFrame,
    aggregates: pl.DataFrame | None,
    periods: list[str],
    report: IngestReport,
) -> None:
    """Land `periods` of `result` (rows, quarantine) and their source totals."""
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
        if part_rows.height == 0 and part_q.height == 0:
            report.warnings.append(f"no rows for {partition}: landed an empty partition")
        land(home, spec.table, source, partition, part_rows)
        land_quarantine(home, source, partition, part_q)
        totals = source_totals(
            led.filter(pl.col("_part") == period),
            None if aggregates is None else aggregates.filter(pl.col("period") == period),
            table=spec.table,
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
        report.warnings.append(f"{outside} rows outside the requested periods were not landed")
    q_outside = q.filter(~pl.col("_part").is_in(periods)).height
    if q_outside:
        report.warnings.append(
            f"{q_outside} rejected rows belong to periods not requested and were not landed"
        )


def source_totals(
    ledger: pl.DataFrame,
    aggregates: pl.DataFrame | None,
    *,
    table: str,
    source: str,
    period: str,
    basis: str,
    computed_at: datetime,
) -> pl.DataFrame:
    """One row per (source file, currency) of a period: the source's own row count and total,
    and the part of it that was quarantined. `aggregates` (file, period, currency, rows,
    amount), when given, are the source's totals (BigQuery's own sums)."""
    per_line = ledger.group_by("x_source_file", "currency").agg(
        source_rows=pl.len().cast(pl.Int64),
        source_total=pl.col("amount").sum(),
        quarantined_rows=pl.col("_quarantined").sum().cast(pl.Int64),
        quarantined_total=pl.col("amount").filter(pl.col("_quarantined")).sum(),
        unreadable_rows=pl.col("amount").is_null().sum().cast(pl.Int64),
    )
    if aggregates is not None:
        agg = aggregates.select(
            "x_source_file",
            "currency",
            pl.col("rows").cast(pl.Int64).alias("source_rows"),
            pl.col("amount").alias("source_total"),
        )
        per_line = agg.join(
            per_line.drop("source_rows", "source_total"),
            on=["x_source_file", "currency"],
            how="full",
            coalesce=True,
            nulls_equal=True,
        ).with_columns(
            pl.col("source_rows").fill_null(0),
            pl.col("source_total").fill_null(0.0),
            pl.col("quarantined_rows").fill_null(0),
            pl.col("quarantined_total").fill_null(0.0),
            pl.col("unreadable_rows").fill_null(0),
        )
    schema = polars_schema(TOTALS_TABLE)
    if not per_line.height:
        return empty_frame(TOTALS_TABLE)
    return (
        per_line.with_columns(
            landing_table=pl.lit(table),
            period=pl.lit(period),
            total_basis=pl.lit(basis),
            computed_at=pl.lit(computed_at, pl.Datetime("us", "UTC")),
            x_source=pl.lit(source),
            x_line_number=pl.lit(None, pl.Int64),
        )
        .sort("x_source_file", "currency", nulls_last=True)
        .select(list(schema))
        .cast(dict(schema))
    )
