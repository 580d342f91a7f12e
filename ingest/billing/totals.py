"""`billing_source_totals`: what a billing source says it holds, per landed period, source file
and currency (rows and cost, computed from the source itself, independently of the mapping to
the landing table), and the part of it that was quarantined. `ingest/core/quality.py`
(`reconcile_totals`) compares them with what landed."""

from __future__ import annotations

from datetime import datetime

import polars as pl

from ingest.core.landing import empty_frame, polars_schema

TOTALS_TABLE = "billing_source_totals"
#: what each billing kind's `ledger_file` returns: one row per source row, read from the file
LEDGER_SCHEMA = {
    "x_source_file": pl.String,
    "x_line_number": pl.Int64,
    "period": pl.String,
    "currency": pl.String,
    "amount": pl.Float64,
}


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
