"""The billing source kinds: AWS CUR, the GCP billing export and Cloud Catalog list prices,
FOCUS files and the Azure / OCI native cost exports.

Each `KindSpec` (ingest/core/spec.py) says which tables a kind lands, how it reads and lands
them, how its landing is checked and how its own totals are read; `ingest/registry.py` lists
every domain's specs.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing import (
    aws_cur,
    azure_cost,
    focus,
    focus_ledger,
    gcp_bigquery,
    gcp_billing,
    gcp_catalog,
    oci_cost,
    s3,
    suites,
)
from ingest.billing.aws_deliveries import land_aws_cur
from ingest.billing.gcp_bigquery import invoice_months_for, read_bigquery
from ingest.billing.gcp_catalog import land_catalog
from ingest.billing.periods import land_billing_files, land_periods
from ingest.billing.tables import TABLES
from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.spec import KindOptions, KindSpec, LandContext, SourceTotals

TOTALS = {"billing_source_totals": TABLES["billing_source_totals"]}
#: the billing suites register when this module loads
SUITE_TABLES = suites.TABLES


def _gcp_usage_day() -> pl.Expr:
    return pl.col("usage_start_time").dt.convert_time_zone("UTC").dt.date()


def _focus_period() -> pl.Expr:
    return pl.col("x_billing_period")


def _focus_usage_day() -> pl.Expr:
    return pl.col("ChargePeriodStart").dt.convert_time_zone("UTC").dt.date()


def _read_gcp(path: Path, _day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return gcp_billing.read_gcp_billing_file(path, source=source, options=options)


def _land_gcp_billing(ctx: LandContext) -> None:
    """Export files, or a `bigquery://project.dataset.table` location (one query per run)."""
    if not ctx.location.startswith("bigquery://"):
        land_billing_files(ctx)
        return
    bq = read_bigquery(
        ctx.location, source=ctx.source.name, months=invoice_months_for(ctx.days), **ctx.options
    )
    ctx.report.files_read.extend(bq.result.files)
    ctx.report.warnings.extend(bq.result.warnings)
    land_periods(ctx, bq.result, bq.ledger, bq.aggregates)


def _reject_bigquery(ctx: LandContext) -> None:
    if ctx.location.startswith("bigquery://"):
        raise IngestError(f"source {ctx.source.name}: bigquery:// locations are for gcp_billing")
    land_billing_files(ctx)


def _read_focus(path: Path, _day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return focus.read_focus_file(path, source=source, options=options)


def _read_azure(path: Path, _day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return azure_cost.read_azure_cost(path, source=source, options=options)


def _read_oci(path: Path, _day: date | None, source: str, options: dict[str, Any]) -> ReadResult:
    return oci_cost.read_oci_cost(path, source=source, options=options)


def _focus_totals(ledger: Any, basis: str) -> SourceTotals:
    return SourceTotals(
        ledger=ledger,
        basis=basis,
        period=_focus_period,
        usage_day=_focus_usage_day,
    )


_CREDENTIALS = (
    "credentials are not read from fleetledger.yml; use the standard AWS chain "
    "(AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, SSO, an instance or container role)"
)

#: the options each billing kind's readers accept (docs/config.md, "Source options")
AWS_CUR_OPTIONS = KindOptions(
    common=("export_name", "report_name", *s3.CLIENT_OPTIONS),
    formats={f: () for f in aws_cur.FORMATS},
    default_format="auto",
    refused={name: _CREDENTIALS for name in s3.SECRET_OPTIONS},
)
GCP_BILLING_OPTIONS = KindOptions(
    formats={f: ("encoding",) for f in gcp_billing.FORMATS},
    default_format="auto",
    schemes={"bigquery": gcp_bigquery.OPTIONS},
)
GCP_CATALOG_OPTIONS = KindOptions(common=gcp_catalog.OPTIONS)
FOCUS_OPTIONS = KindOptions(
    common=tuple(o for o in focus.OPTIONS if o != "format"),
    formats={"auto": (), "csv": (), "parquet": ()},
    default_format="auto",
)
AZURE_COST_OPTIONS = KindOptions(common=azure_cost.OPTIONS)
OCI_COST_OPTIONS = KindOptions(common=("encoding",))

AWS_CUR = KindSpec(
    kind="aws_cur",
    group="billing",
    description="AWS Cost and Usage Report (CUR 2.0 or legacy) deliveries, local or s3://",
    tables={
        "aws_cur_lines": TABLES["aws_cur_lines"],
        "aws_cur_deliveries": TABLES["aws_cur_deliveries"],
        **TOTALS,
    },
    land=land_aws_cur,
    partition="period",
    suite="blocking",
    records_totals=True,
    remote=("s3",),
    open_tables=("aws_cur_lines",),
    options=AWS_CUR_OPTIONS,
)

GCP_BILLING = KindSpec(
    kind="gcp_billing",
    group="billing",
    description="GCP Cloud Billing export: JSONL / CSV / Parquet files or bigquery:// tables",
    tables={"gcp_billing_lines": TABLES["gcp_billing_lines"], **TOTALS},
    read=_read_gcp,
    land=_land_gcp_billing,
    partition="period",
    suite="blocking",
    totals=SourceTotals(
        ledger=gcp_billing.ledger_file,
        basis=gcp_billing.TOTAL_BASIS,
        period=lambda: gcp_billing.period_of(pl.col("invoice_month")),
        usage_day=_gcp_usage_day,
    ),
    records_totals=True,
    remote=("bigquery",),
    options=GCP_BILLING_OPTIONS,
)

GCP_CATALOG = KindSpec(
    kind="gcp_catalog",
    group="billing",
    description="GCP Cloud Catalog list prices of GPU SKUs (services.skus.list)",
    tables={"gcp_catalog_skus": TABLES["gcp_catalog_skus"]},
    land=land_catalog,
    partition="fetch",
    suite="blocking",
    remote=("http", "https"),
    options=GCP_CATALOG_OPTIONS,
)


def _focus_kind(
    kind: str, description: str, read: Any, totals: SourceTotals, options: KindOptions
) -> KindSpec:
    return KindSpec(
        kind=kind,
        group="billing",
        description=description,
        tables={"focus_lines": TABLES["focus_lines"], **TOTALS},
        read=read,
        land=_reject_bigquery,
        partition="period",
        suite="blocking",
        totals=totals,
        records_totals=True,
        options=options,
    )


FOCUS = _focus_kind(
    "focus",
    "FOCUS 1.0–1.3 cost files (CSV or Parquet)",
    _read_focus,
    _focus_totals(focus_ledger.ledger_file, focus.TOTAL_BASIS),
    FOCUS_OPTIONS,
)
AZURE_COST = _focus_kind(
    "azure_cost",
    "Azure Cost Management exports, mapped to FOCUS",
    _read_azure,
    _focus_totals(azure_cost.ledger_file, azure_cost.TOTAL_BASIS),
    AZURE_COST_OPTIONS,
)
OCI_COST = _focus_kind(
    "oci_cost",
    "OCI cost reports, mapped to FOCUS",
    _read_oci,
    _focus_totals(oci_cost.ledger_file, oci_cost.TOTAL_BASIS),
    OCI_COST_OPTIONS,
)

SPECS = (AWS_CUR, GCP_BILLING, GCP_CATALOG, FOCUS, AZURE_COST, OCI_COST)
