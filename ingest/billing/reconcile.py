"""`reconcile_totals(home, table, source, partition)`: what a billing source landed against its
own totals (`billing_source_totals`, written by ingest/billing/totals.py): per source file and
currency, landed == source total, and landed + quarantined == source total."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from ingest.billing.totals import TOTALS_TABLE
from ingest.core.errors import IngestError
from ingest.core.quality import partition_file

#: per landing table: what the source totals sum (an expression on landed rows) and the
#: currency column
TOTAL_MEASURES: dict[str, tuple[Callable[[], pl.Expr], str]] = {
    "gcp_billing_lines": (lambda: pl.col("cost") + pl.col("credits_amount"), "currency"),
    "focus_lines": (lambda: pl.col("BilledCost"), "BillingCurrency"),
    "aws_cur_lines": (lambda: pl.col("line_item_unblended_cost"), "line_item_currency_code"),
}


@dataclass
class TotalsLine:
    file: str
    currency: str | None
    source_rows: int
    source_total: float
    landed_rows: int
    landed_total: float
    quarantined_rows: int
    quarantined_total: float
    unreadable_rows: int

    @property
    def matches(self) -> bool:
        return self.landed_rows == self.source_rows and _close(self.landed_total, self.source_total)

    @property
    def accounted(self) -> bool:
        return self.landed_rows + self.quarantined_rows == self.source_rows and _close(
            self.landed_total + self.quarantined_total, self.source_total
        )

    def __str__(self) -> str:
        cur = self.currency or "(no currency)"
        text = (
            f"{self.file} {cur}: landed {self.landed_total:.6f} in {self.landed_rows} rows, "
            f"source {self.source_total:.6f} in {self.source_rows} rows"
        )
        if self.quarantined_rows:
            text += f", {self.quarantined_total:.6f} in {self.quarantined_rows} quarantined rows"
        if self.unreadable_rows:
            text += f", {self.unreadable_rows} rows without a readable amount"
        return text


@dataclass
class TotalsResult:
    table: str
    source: str
    partition: str
    lines: list[TotalsLine]
    recorded: bool  # whether the source totals of the partition were found

    @property
    def matches(self) -> bool:
        return self.recorded and all(x.matches for x in self.lines)

    @property
    def accounted(self) -> bool:
        return self.recorded and all(x.accounted for x in self.lines)

    def summary(self) -> str:
        if not self.recorded:
            return f"{self.source} {self.partition}: no source totals recorded"
        bad = [x for x in self.lines if not x.matches]
        if not bad:
            total = sum(x.source_total for x in self.lines)
            return (
                f"{self.source} {self.partition}: landed totals equal the source's in "
                f"{len(self.lines)} file/currency groups (sum {total:.6f})"
            )
        return f"{self.source} {self.partition}: " + "; ".join(str(x) for x in bad)


def _close(a: float, b: float) -> bool:
    """Equal up to float summation error (row counts are compared exactly beside it)."""
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9)


def _landed_rows(path: Path, currency: str) -> pl.DataFrame | None:
    """The landed rows of a partition; None when there are none (an empty CUR partition keeps
    only lineage columns). A missing currency column reads as null."""
    if not path.exists():
        return None
    rows = pl.read_parquet(path)
    if not rows.height:
        return None
    if currency not in rows.columns:
        rows = rows.with_columns(pl.lit(None, pl.String).alias(currency))
    return rows


def reconcile_totals(home: Path, table: str, source: str, partition: str) -> TotalsResult:
    """Landed rows vs the source's own totals for one partition (see the module docstring)."""
    if table not in TOTAL_MEASURES:
        raise IngestError(f"no total measure for landing table {table!r}")
    measure, currency = TOTAL_MEASURES[table]
    totals_path = partition_file(home, TOTALS_TABLE, source, partition)
    if not totals_path.exists():
        return TotalsResult(table, source, partition, [], recorded=False)
    totals = pl.read_parquet(totals_path)
    rows = _landed_rows(partition_file(home, table, source, partition), currency)
    landed = (
        rows.group_by("x_source_file", pl.col(currency).alias("currency")).agg(
            landed_rows=pl.len().cast(pl.Int64), landed_total=measure().sum()
        )
        if rows is not None
        else pl.DataFrame(
            schema={
                "x_source_file": pl.String,
                "currency": pl.String,
                "landed_rows": pl.Int64,
                "landed_total": pl.Float64,
            }
        )
    )
    joined = totals.join(
        landed, on=["x_source_file", "currency"], how="full", coalesce=True, nulls_equal=True
    ).sort("x_source_file", "currency", nulls_last=True)
    lines = [
        TotalsLine(
            file=r["x_source_file"],
            currency=r["currency"],
            source_rows=r["source_rows"] or 0,
            source_total=r["source_total"] or 0.0,
            landed_rows=r["landed_rows"] or 0,
            landed_total=r["landed_total"] or 0.0,
            quarantined_rows=r["quarantined_rows"] or 0,
            quarantined_total=r["quarantined_total"] or 0.0,
            unreadable_rows=r["unreadable_rows"] or 0,
        )
        for r in joined.iter_rows(named=True)
    ]
    return TotalsResult(table, source, partition, lines, recorded=True)
