"""Schemas of the billing landing tables beyond CUR and the GCP export (docs/landing.md):

- `focus_lines`: FOCUS 1.0–1.3 rows, and Azure / OCI native exports mapped to FOCUS;
- `gcp_catalog_skus`: Cloud Catalog list prices of GPU SKUs, with their fetch time;
- `billing_source_totals`: what each billing source said it holds (rows and cost per billing
  period and currency, computed from the source itself), for the reconciliation checks.

`ingest/core/landing.py` merges these into its table registry; the lineage columns are added there.
Only pyarrow is imported here, so landing.py stays light.
"""

from __future__ import annotations

import pyarrow as pa

_TS = pa.timestamp("us", tz="UTC")
_STR = pa.string()
_F64 = pa.float64()
_I64 = pa.int64()

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

BILLING_TABLES: dict[str, list[tuple[str, pa.DataType]]] = {
    "focus_lines": [*FOCUS_COLUMNS, *FOCUS_X_COLUMNS],
    "gcp_catalog_skus": GCP_CATALOG_COLUMNS,
    "billing_source_totals": SOURCE_TOTALS_COLUMNS,
}
