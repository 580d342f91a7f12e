"""The Great Expectations suites of the billing landing tables (declared with
ingest/core/quality.py): `gcp_billing_lines`, `focus_lines`, `gcp_catalog_skus`,
`aws_cur_lines`, `aws_cur_deliveries`. Registered on import (ingest/billing/kinds.py imports
this module)."""

from __future__ import annotations

from datetime import timedelta

from ingest.billing.tables import FOCUS_COLUMNS, FOCUS_X_COLUMNS, GCP_CATALOG_COLUMNS
from ingest.billing.totals import TOTALS_TABLE
from ingest.core.quality import Equals, Suite, Within, register_suite

_GCP_COLUMNS: dict[str, str] = {
    "billing_account_id": "string",
    "service_id": "string",
    "service_description": "string",
    "sku_id": "string",
    "sku_description": "string",
    "usage_start_time": "timestamp",
    "usage_end_time": "timestamp",
    "project_id": "string",
    "project_name": "string",
    "labels": "string",
    "location_region": "string",
    "location_zone": "string",
    "resource_name": "string",
    "resource_global_name": "string",
    "cost": "float",
    "currency": "string",
    "currency_conversion_rate": "float",
    "usage_amount": "float",
    "usage_unit": "string",
    "usage_amount_in_pricing_units": "float",
    "usage_pricing_unit": "string",
    "credits_amount": "float",
    "credits_cud_amount": "float",
    "credits": "string",
    "invoice_month": "string",
    "cost_type": "string",
    "cost_at_list": "float",
    "export_time": "timestamp",
}
_LINEAGE = {"x_source": "string", "x_source_file": "string", "x_line_number": "int"}


def _focus_columns() -> dict[str, str]:
    family = {"double": "float", "string": "string", "timestamp[us, tz=UTC]": "timestamp"}
    return {n: family[str(t)] for n, t in [*FOCUS_COLUMNS, *FOCUS_X_COLUMNS]}


def _catalog_columns() -> dict[str, str]:
    family = {"double": "float", "string": "string", "timestamp[us, tz=UTC]": "timestamp"}
    return {n: family[str(t)] for n, t in GCP_CATALOG_COLUMNS}


# a month's invoice can start at local midnight anywhere: ±14 h around the UTC month
_TZ_SLACK = timedelta(hours=14)

register_suite(
    Suite(
        table="gcp_billing_lines",
        columns={**_GCP_COLUMNS, **_LINEAGE},
        not_null=(
            "invoice_month",
            "cost",
            "credits_amount",
            "credits_cud_amount",
            "labels",
            "credits",
            "x_source",
            "x_source_file",
            "x_line_number",
        ),
        unique=(("x_source_file", "x_line_number"),),
        currency=("currency",),
        ranges={
            "credits_amount": (None, 0),
            "credits_cud_amount": (None, 0),
            "currency_conversion_rate": (0, None),
        },
        ordered=(("usage_end_time", "usage_start_time"),),
        equals=(Equals("invoice_month", "%Y%m"),),
    )
)

register_suite(
    Suite(
        table="focus_lines",
        columns={**_focus_columns(), **_LINEAGE},
        not_null=(
            "BilledCost",
            "BillingCurrency",
            "BillingPeriodStart",
            "BillingPeriodEnd",
            "ChargePeriodStart",
            "ChargePeriodEnd",
            "x_provider",
            "x_billing_period",
            "x_source",
            "x_source_file",
            "x_line_number",
        ),
        unique=(("x_source_file", "x_line_number"),),
        currency=("BillingCurrency", "PricingCurrency"),
        value_sets={
            "ChargeCategory": ("Usage", "Purchase", "Tax", "Credit", "Adjustment"),
            "ChargeClass": ("Correction",),
        },
        ordered=(
            ("BillingPeriodEnd", "BillingPeriodStart"),
            ("ChargePeriodEnd", "ChargePeriodStart"),
        ),
        within=(Within("BillingPeriodStart", _TZ_SLACK),),
        equals=(Equals("x_billing_period", "%Y-%m"),),
    )
)

register_suite(
    Suite(
        table="gcp_catalog_skus",
        columns={**_catalog_columns(), **_LINEAGE},
        not_null=("sku_id", "service_id", "unit_price", "currency_code", "fetched_at"),
        unique=(("sku_id", "tier_start_usage_amount", "effective_time", "fetched_at"),),
        currency=("currency_code",),
        ranges={"unit_price": (0, None), "tier_start_usage_amount": (0, None)},
        within=(Within("fetched_at"),),
    )
)

register_suite(
    Suite(
        table="aws_cur_lines",
        columns={
            "line_item_line_item_type": "string",
            "line_item_unblended_cost": "float",
            "line_item_currency_code": "string",
            "line_item_usage_start_date": "timestamp",
            "x_billing_period": "string",
            **_LINEAGE,
        },
        not_null=("line_item_line_item_type", "line_item_currency_code", "x_billing_period"),
        currency=("line_item_currency_code",),
        equals=(Equals("x_billing_period", "%Y-%m"),),
    )
)

register_suite(
    Suite(
        table=TOTALS_TABLE,
        columns={
            "landing_table": "string",
            "period": "string",
            "currency": "string",
            "total_basis": "string",
            "source_rows": "int",
            "source_total": "float",
            "quarantined_rows": "int",
            "quarantined_total": "float",
            "unreadable_rows": "int",
            "computed_at": "timestamp",
            **_LINEAGE,
        },
        not_null=("landing_table", "period", "source_rows", "source_total"),
        currency=("currency",),
        ranges={"source_rows": (0, None), "quarantined_rows": (0, None)},
        equals=(Equals("period", "%Y-%m"),),
    )
)

#: the tables this module gives a suite
TABLES = ("gcp_billing_lines", "focus_lines", "gcp_catalog_skus", "aws_cur_lines", TOTALS_TABLE)
