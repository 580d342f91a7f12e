"""Schemas of the billing landing tables (docs/landing.md):

- `aws_cur_lines` (open: the CUR's own columns; these are the known ones) and
  `aws_cur_deliveries` (one row per CUR delivery read);
- `gcp_billing_lines`: the GCP billing export, one row per line;
- `focus_lines`: FOCUS 1.0–1.3 rows, and Azure / OCI native exports mapped to FOCUS;
- `gcp_catalog_skus`: Cloud Catalog list prices of GPU SKUs, with their fetch time;
- `billing_source_totals`: what each billing source said it holds (rows and cost per billing
  period and currency, computed from the source itself), for the reconciliation checks.

`ingest/core/landing.py` merges `TABLES` into its table registry and adds the lineage columns;
the kind specs name them. Only pyarrow is imported here, so landing stays light.
"""

from __future__ import annotations

import pyarrow as pa

from ingest.core.columns import F64, I64, STR, TS

_TS, _STR, _F64, _I64 = TS, STR, F64, I64

# Columns of CUR 2.0 that FORMATS.md names, with the types CUR 2.0 uses. The map columns are
# landed as JSON object strings.
CUR_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("bill_billing_period_start_date", TS),
    ("bill_billing_period_end_date", TS),
    ("bill_payer_account_id", STR),
    ("line_item_usage_account_id", STR),
    ("line_item_line_item_type", STR),
    ("line_item_usage_start_date", TS),
    ("line_item_usage_end_date", TS),
    ("line_item_product_code", STR),
    ("line_item_usage_type", STR),
    ("line_item_operation", STR),
    ("line_item_resource_id", STR),
    ("line_item_usage_amount", F64),
    ("line_item_unblended_rate", F64),
    ("line_item_unblended_cost", F64),
    ("line_item_net_unblended_cost", F64),
    ("line_item_currency_code", STR),
    ("product_instance_type", STR),
    ("product_region_code", STR),
    ("pricing_public_on_demand_cost", F64),
    ("pricing_public_on_demand_rate", F64),
    ("pricing_term", STR),
    ("pricing_unit", STR),
    ("savings_plan_savings_plan_a_r_n", STR),
    ("savings_plan_savings_plan_effective_cost", F64),
    ("savings_plan_total_commitment_to_date", F64),
    ("savings_plan_used_commitment", F64),
    ("reservation_reservation_a_r_n", STR),
    ("reservation_effective_cost", F64),
    ("reservation_unused_amortized_upfront_fee_for_billing_period", F64),
    ("reservation_unused_recurring_fee", F64),
    ("split_line_item_parent_resource_id", STR),
    ("split_line_item_split_usage", F64),
    ("split_line_item_split_usage_ratio", F64),
    ("split_line_item_split_cost", F64),
    ("split_line_item_unused_cost", F64),
    ("split_line_item_public_on_demand_split_cost", F64),
    ("resource_tags", STR),
    ("cost_category", STR),
    ("product", STR),
    ("discount", STR),
    ("identity_line_item_id", STR),
    ("identity_time_interval", STR),
    ("line_item_line_item_description", STR),
    ("split_line_item_net_split_cost", F64),
    ("split_line_item_net_unused_cost", F64),
    # INCLUDE CAPACITY RESERVATION DATA (Capacity Blocks for ML: docs/metrics.md)
    ("capacity_reservation_capacity_reservation_arn", STR),
    ("capacity_reservation_capacity_reservation_status", STR),
    ("capacity_reservation_capacity_reservation_type", STR),
    ("x_execution_id", STR),
    ("x_billing_period", STR),
]
CUR_MAP_COLUMNS = ("resource_tags", "cost_category", "product", "discount")

# One row per service and currency of each CUR delivery (manifest) landed: what it said, kept
# across restatements (not replaced per period). See ingest/billing/aws_deliveries.py.
CUR_DELIVERY_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("billing_period", STR),
    ("delivery_id", STR),
    ("format", STR),
    ("manifest", STR),
    ("manifest_version", STR),
    ("delivered_at", TS),
    ("ingested_at", TS),
    ("service", STR),
    ("currency", STR),
    ("line_count", I64),
    ("billed_cost", F64),
    ("effective_cost", F64),
    ("list_cost", F64),
]


#: FOCUS columns of versions 1.0–1.3 with their landing types (a superset: a column a file
#: lacks lands null). Costs, prices and quantities are doubles in the line's BillingCurrency (or
#: PricingCurrency for the PricingCurrency* columns); times are UTC; JSON columns (Tags, ...)
#: are JSON object strings.
FOCUS_COLUMNS: list[tuple[str, pa.DataType]] = [
    # 1.0
    ("AvailabilityZone", _STR),
    ("BilledCost", _F64),
    ("BillingAccountId", _STR),
    ("BillingAccountName", _STR),
    ("BillingCurrency", _STR),
    ("BillingPeriodEnd", _TS),
    ("BillingPeriodStart", _TS),
    ("ChargeCategory", _STR),
    ("ChargeClass", _STR),
    ("ChargeDescription", _STR),
    ("ChargeFrequency", _STR),
    ("ChargePeriodEnd", _TS),
    ("ChargePeriodStart", _TS),
    ("CommitmentDiscountCategory", _STR),
    ("CommitmentDiscountId", _STR),
    ("CommitmentDiscountName", _STR),
    ("CommitmentDiscountStatus", _STR),
    ("CommitmentDiscountType", _STR),
    ("ConsumedQuantity", _F64),
    ("ConsumedUnit", _STR),
    ("ContractedCost", _F64),
    ("ContractedUnitPrice", _F64),
    ("EffectiveCost", _F64),
    ("InvoiceIssuerName", _STR),
    ("ListCost", _F64),
    ("ListUnitPrice", _F64),
    ("PricingCategory", _STR),
    ("PricingQuantity", _F64),
    ("PricingUnit", _STR),
    ("ProviderName", _STR),
    ("PublisherName", _STR),
    ("RegionId", _STR),
    ("RegionName", _STR),
    ("ResourceId", _STR),
    ("ResourceName", _STR),
    ("ResourceType", _STR),
    ("ServiceCategory", _STR),
    ("ServiceName", _STR),
    ("SkuId", _STR),
    ("SkuPriceId", _STR),
    ("SubAccountId", _STR),
    ("SubAccountName", _STR),
    ("Tags", _STR),
    # 1.1
    ("CapacityReservationId", _STR),
    ("CapacityReservationStatus", _STR),
    ("CommitmentDiscountQuantity", _F64),
    ("CommitmentDiscountUnit", _STR),
    ("ServiceSubcategory", _STR),
    ("SkuMeter", _STR),
    ("SkuPriceDetails", _STR),
    # 1.2
    ("BillingAccountType", _STR),
    ("SubAccountType", _STR),
    ("InvoiceId", _STR),
    ("PricingCurrency", _STR),
    ("PricingCurrencyContractedUnitPrice", _F64),
    ("PricingCurrencyEffectiveCost", _F64),
    ("PricingCurrencyListUnitPrice", _F64),
    # 1.3
    ("ServiceProviderName", _STR),
    ("HostProviderName", _STR),
    ("AllocatedMethodId", _STR),
    ("AllocatedMethodDetails", _STR),
    ("AllocatedResourceId", _STR),
    ("AllocatedResourceName", _STR),
    ("AllocatedTags", _STR),
]

#: fleetledger's own columns of `focus_lines`
FOCUS_X_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("x_provider", _STR),  # aws | azure | gcp | oci | a lowercase neocloud name
    ("x_source_format", _STR),  # focus_csv | focus_parquet | azure_cost_csv | oci_cost_csv
    ("x_focus_version", _STR),  # 1.0 … 1.3 (declared or detected); null for native exports
    ("x_billing_period", _STR),  # YYYY-MM of BillingPeriodStart (the landing partition)
    ("x_extra", _STR),  # JSON object: the file's columns that are not FOCUS columns
]

GCP_CATALOG_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("service_id", _STR),
    ("service_display_name", _STR),
    ("sku_id", _STR),
    ("sku_name", _STR),
    ("description", _STR),
    ("resource_family", _STR),
    ("resource_group", _STR),
    ("usage_type", _STR),
    ("service_regions", _STR),  # JSON array string
    ("usage_unit", _STR),
    ("usage_unit_description", _STR),
    ("base_unit", _STR),
    ("base_unit_conversion_factor", _F64),
    ("display_quantity", _F64),
    ("tier_start_usage_amount", _F64),
    ("unit_price", _F64),
    ("currency_code", _STR),
    ("effective_time", _TS),
    ("fetched_at", _TS),
]

SOURCE_TOTALS_COLUMNS: list[tuple[str, pa.DataType]] = [
    ("landing_table", _STR),
    ("period", _STR),  # YYYY-MM
    ("currency", _STR),
    ("total_basis", _STR),  # what was summed, in the source's own terms
    ("source_rows", _I64),
    ("source_total", _F64),
    ("quarantined_rows", _I64),
    ("quarantined_total", _F64),
    ("unreadable_rows", _I64),  # rows whose amount could not be read from the source
    ("computed_at", _TS),
]

TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    # open-ended: only the lineage columns are fixed; the rest is the schema file's hint
    "aws_cur_lines": CUR_COLUMNS,
    "aws_cur_deliveries": CUR_DELIVERY_COLUMNS,
    "gcp_billing_lines": [
        ("billing_account_id", STR),
        ("service_id", STR),
        ("service_description", STR),
        ("sku_id", STR),
        ("sku_description", STR),
        ("usage_start_time", TS),
        ("usage_end_time", TS),
        ("project_id", STR),
        ("project_name", STR),
        ("labels", STR),
        ("location_region", STR),
        ("location_zone", STR),
        ("resource_name", STR),
        ("resource_global_name", STR),
        ("cost", F64),
        ("currency", STR),
        ("currency_conversion_rate", F64),
        ("usage_amount", F64),
        ("usage_unit", STR),
        ("usage_amount_in_pricing_units", F64),
        ("usage_pricing_unit", STR),
        ("credits_amount", F64),
        ("credits_cud_amount", F64),  # the COMMITTED_USAGE_DISCOUNT credits within it
        ("credits", STR),
        ("invoice_month", STR),
        ("cost_type", STR),
        ("cost_at_list", F64),
        ("export_time", TS),
    ],
    "focus_lines": [*FOCUS_COLUMNS, *FOCUS_X_COLUMNS],
    "gcp_catalog_skus": GCP_CATALOG_COLUMNS,
    "billing_source_totals": SOURCE_TOTALS_COLUMNS,
}
#: tables whose columns are the source's own (only lineage is fixed)
OPEN_TABLES = ("aws_cur_lines",)
