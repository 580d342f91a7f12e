"""OCI cost reports (`reports/cost-csv/*.csv(.gz)`) → FOCUS rows in `focus_lines`.

A file must have `lineItem/intervalUsageStart`, `lineItem/intervalUsageEnd`, `cost/myCost` and
`cost/currencyCode`; otherwise it fails, naming the file and the missing columns. Times are ISO
8601 with or without seconds (`2023-11-13T10:00Z`).

Mapping (FOCUS ← OCI):
- BilledCost, EffectiveCost ← cost/myCost; ContractedCost ← usage/billedQuantity ×
  cost/unitPrice (else cost/myCost); ContractedUnitPrice ← cost/unitPrice. A cost report has no
  list price: ListCost and ListUnitPrice are the contracted ones.
- ChargePeriodStart/End ← lineItem/intervalUsageStart/End; a cost report has no billing period:
  BillingPeriodStart/End is the UTC calendar month of the usage start.
- BillingCurrency ← cost/currencyCode; BillingAccountId ← lineItem/tenantId; SubAccountId/Name ←
  product/compartmentId/Name; ResourceId ← product/resourceId; RegionId ← product/region;
  AvailabilityZone ← product/availabilityDomain; SkuId ← cost/productSku; ChargeDescription ←
  product/Description; ServiceName ← product/service (ServiceCategory from it: COMPUTE →
  Compute, BLOCK_STORAGE / OBJECT_STORAGE / FILE_STORAGE → Storage, NETWORK → Networking, ...);
  PricingQuantity ← usage/billedQuantity, PricingUnit ← cost/skuUnitDescription;
  ChargeClass ← Correction when lineItem/isCorrection is true; ChargeCategory Usage.
- Tags ← every `tags/<key>` column with a value, as a JSON object `{"<key>": value}`.
- ProviderName, ServiceProviderName, HostProviderName, PublisherName, InvoiceIssuerName ←
  Oracle. The other columns (lineItem/referenceNo, overage columns, ...) go to `x_extra`.
"""

from __future__ import annotations

import json
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.focus import frame_to_focus, read_csv_strings
from ingest.billing.focus_ledger import csv_dict_rows, ledger_frame
from ingest.core.common import ReadResult, parse_utc
from ingest.core.errors import IngestError
from ingest.core.text import encoding_option

REQUIRED = (
    "lineItem/intervalUsageStart",
    "lineItem/intervalUsageEnd",
    "cost/myCost",
    "cost/currencyCode",
)
TOTAL_BASIS = "cost/myCost"
_SERVICE_CATEGORY = {
    "compute": "Compute",
    "block_storage": "Storage",
    "object_storage": "Storage",
    "file_storage": "Storage",
    "network": "Networking",
    "database": "Databases",
    "mysql": "Databases",
    "nosql": "Databases",
    "data_science": "AI and Machine Learning",
    "generative_ai": "AI and Machine Learning",
    "monitoring": "Management and Governance",
    "logging": "Management and Governance",
    "oke": "Compute",
}
_USED = (
    *REQUIRED,
    "lineItem/tenantId",
    "lineItem/isCorrection",
    "product/service",
    "product/compartmentId",
    "product/compartmentName",
    "product/region",
    "product/availabilityDomain",
    "product/resourceId",
    "product/Description",
    "usage/billedQuantity",
    "cost/productSku",
    "cost/unitPrice",
    "cost/skuUnitDescription",
)


def _tags_json(df: pl.DataFrame, tag_cols: list[str]) -> pl.Series:
    """`tags/<key>` columns → one JSON object per row (keys with a value only)."""
    if not tag_cols:
        return pl.Series("Tags", [None] * df.height, dtype=pl.String)
    keys = [c.removeprefix("tags/") for c in tag_cols]
    out: list[str | None] = []
    for values in df.select(tag_cols).iter_rows():
        obj = {k: v for k, v in zip(keys, values, strict=True) if v not in (None, "")}
        out.append(json.dumps(obj) if obj else None)
    return pl.Series("Tags", out, dtype=pl.String)


def read_oci_cost(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one OCI cost report CSV into `focus_lines` rows."""
    unknown = sorted(set(options or {}) - {"encoding"})
    if unknown:
        raise IngestError(f"unknown options {', '.join(unknown)} (oci_cost has only encoding)")
    path = Path(path)
    file = str(path)
    df, lines, not_text = read_csv_strings(path, [], encoding_option(options))
    missing = [c for c in REQUIRED if c not in df.columns]
    if missing:
        raise IngestError(
            f"OCI cost report lacks columns {', '.join(missing)} "
            f"(header: {', '.join(df.columns[:6])}{', ...' if len(df.columns) > 6 else ''})",
            file=file,
            line=1,
        )
    tag_cols = [c for c in df.columns if c.startswith("tags/")]
    native = {c: f"n:{c}" for c in df.columns}
    frame = df.rename(native).with_columns(_tags_json(df, tag_cols))

    def n(name: str) -> pl.Expr:
        return pl.col(native[name]) if name in native else pl.lit(None, pl.String)

    def num(name: str) -> pl.Expr:
        return n(name).str.strip_chars().cast(pl.Float64, strict=False)

    usage_start = parse_utc(n("lineItem/intervalUsageStart"))
    month = usage_start.dt.truncate("1mo")
    cost_text = n("cost/myCost")
    contracted = pl.coalesce(
        num("usage/billedQuantity") * num("cost/unitPrice"),
        cost_text.str.strip_chars().cast(pl.Float64, strict=False),
    )
    service = n("product/service")
    focus = frame.with_columns(
        BilledCost=cost_text,
        EffectiveCost=cost_text,
        ContractedCost=contracted,
        ListCost=contracted,
        ContractedUnitPrice=num("cost/unitPrice"),
        ListUnitPrice=num("cost/unitPrice"),
        ChargePeriodStart=n("lineItem/intervalUsageStart"),
        ChargePeriodEnd=n("lineItem/intervalUsageEnd"),
        BillingPeriodStart=month,
        BillingPeriodEnd=month.dt.offset_by("1mo"),
        BillingCurrency=n("cost/currencyCode"),
        BillingAccountId=n("lineItem/tenantId"),
        SubAccountId=n("product/compartmentId"),
        SubAccountName=n("product/compartmentName"),
        ResourceId=n("product/resourceId"),
        RegionId=n("product/region"),
        RegionName=n("product/region"),
        AvailabilityZone=n("product/availabilityDomain"),
        SkuId=n("cost/productSku"),
        ChargeDescription=n("product/Description"),
        ServiceName=service,
        ServiceCategory=service.str.strip_chars()
        .str.to_lowercase()
        .replace_strict(_SERVICE_CATEGORY, default="Other", return_dtype=pl.String),
        PricingQuantity=num("usage/billedQuantity"),
        ConsumedQuantity=num("usage/billedQuantity"),
        PricingUnit=n("cost/skuUnitDescription"),
        ConsumedUnit=n("cost/skuUnitDescription"),
        ChargeCategory=pl.lit("Usage"),
        ChargeClass=pl.when(n("lineItem/isCorrection").str.to_lowercase() == "true").then(
            pl.lit("Correction")
        ),
        ChargeFrequency=pl.lit("Usage-Based"),
        ProviderName=pl.lit("Oracle"),
        ServiceProviderName=pl.lit("Oracle"),
        HostProviderName=pl.lit("Oracle"),
        PublisherName=pl.lit("Oracle"),
        InvoiceIssuerName=pl.lit("Oracle"),
    )
    focus_names = [c for c in focus.columns if not c.startswith(("n:", "_"))]
    extras = {native[c]: c for c in df.columns if c not in _USED and c not in tag_cols}
    return frame_to_focus(
        focus,
        {c: c for c in focus_names},
        extras,
        source=source,
        file=file,
        source_format="oci_cost_csv",
        version=None,
        provider="oci",
        line_numbers=lines,
        raw_columns={native[c]: c for c in df.columns},
        row_reasons=not_text,
    )


def ledger_file(path: str | Path, options: dict[str, Any] | None = None) -> pl.DataFrame:
    """Each row's month (of lineItem/intervalUsageStart), currency and cost/myCost, from the
    file's text (csv module, Decimal)."""
    entries: list[tuple[int, str | None, str | None, float | None]] = []
    for line, row in csv_dict_rows(Path(path), encoding_option(options)):
        try:
            amount: Decimal | None = Decimal((row.get("cost/myCost") or "x").strip())
        except InvalidOperation:
            amount = None
        start = (row.get("lineItem/intervalUsageStart") or "").strip()
        period = start[:7] if len(start) >= 7 and start[4] == "-" else None
        currency = (row.get("cost/currencyCode") or "").strip().upper() or None
        entries.append(
            (
                line,
                period,
                currency,
                float(amount) if amount is not None and amount.is_finite() else None,
            )
        )
    return ledger_frame(str(path), entries)
