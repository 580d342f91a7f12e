"""Azure Cost Management exports (EA and MCA actual-cost CSV) → FOCUS rows in `focus_lines`.

Headers are matched ignoring case (EA writes `MeterCategory`, MCA `meterCategory`); a UTF-8
byte-order mark is dropped. A file must have a usage date (`Date` or `UsageDateTime`), a cost
(`CostInBillingCurrency`, `Cost` or `PreTaxCost`) and a currency (`BillingCurrencyCode`,
`BillingCurrency` or `Currency`); otherwise it fails, naming the file and what is missing.

Dates are `M/D/YYYY` (`9/2/2023`), `MM/DD/YYYY`, ISO `YYYY-MM-DD` or
`M/D/YYYY h:mm:ss AM` (US order, as Azure writes them); `options.date_format` (a strptime
format, e.g. `%d/%m/%Y`) forces one. A row whose date does not parse is quarantined.

Mapping (FOCUS ← Azure):
- BilledCost, EffectiveCost ← the cost column. An actual-cost export carries no amortisation, so
  a reservation purchase is billed and effective in its month (an amortised export is read the
  same way: its cost column is then the amortised cost).
- ListCost ← PayGPrice × Quantity when PayGPrice > 0, else the cost; ContractedCost ← UnitPrice ×
  Quantity when both are present, else the cost; ListUnitPrice ← PayGPrice,
  ContractedUnitPrice ← UnitPrice.
- ChargePeriodStart/End ← the usage day [Date, Date + 1 day) in UTC; BillingPeriodStart/End ←
  BillingPeriodStartDate and BillingPeriodEndDate + 1 day (Azure's end date is inclusive), else
  the calendar month of the usage day.
- ChargeCategory ← ChargeType: Usage, UnusedReservation, UnusedSavingsPlan → Usage; Purchase →
  Purchase; Refund → Purchase with ChargeClass Correction; Tax → Tax; RoundingAdjustment and
  anything else → Adjustment. ChargeFrequency ← Frequency; PricingCategory ← PricingModel
  (OnDemand → Standard, Spot → Dynamic, Reservation / SavingsPlan → Committed).
- CommitmentDiscountId/Name ← benefitId/benefitName, else ReservationId/ReservationName, with
  Type Reservation or Savings Plan, Category Usage or Spend, Status Unused for Unused* charges.
- BillingAccountId/Name ← BillingAccountId/Name; SubAccountId/Name ← SubscriptionId (or
  SubscriptionGuid) / SubscriptionName; ResourceId/Name; RegionId ← ResourceLocation lowercased,
  RegionName ← MeterRegion; SkuId ← MeterId; ServiceName ← MeterCategory; ServiceCategory ←
  ServiceFamily; ChargeDescription ← ProductName (EA: Product), else MeterName; PricingQuantity /
  ConsumedQuantity ← Quantity, PricingUnit / ConsumedUnit ← UnitOfMeasure.
- Tags ← Tags: EA writes a JSON object without its braces (`"env": "prod","org": "x"`); both
  forms become a JSON object.
- ProviderName, ServiceProviderName, HostProviderName, InvoiceIssuerName ← Microsoft;
  PublisherName ← PublisherName, else Microsoft. Other columns are kept in `x_extra`.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.focus import frame_to_focus, read_csv_strings
from ingest.billing.focus_ledger import csv_dict_rows, ledger_frame
from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.text import encoding_option

OPTIONS = ("date_format", "encoding")
TOTAL_BASIS = "cost (CostInBillingCurrency | Cost | PreTaxCost)"
DATE_FORMATS = (
    "%m/%d/%Y",
    "%Y-%m-%d",
    "%m/%d/%Y %I:%M:%S %p",
    "%m/%d/%Y %H:%M:%S",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%dT%H:%M:%S.%fZ",
)
DATE_COLUMNS = ("Date", "UsageDateTime")
COST_COLUMNS = ("CostInBillingCurrency", "Cost", "PreTaxCost")
CURRENCY_COLUMNS = ("BillingCurrencyCode", "BillingCurrency", "Currency")
_CHARGE_CATEGORY = {
    "usage": "Usage",
    "unusedreservation": "Usage",
    "unusedsavingsplan": "Usage",
    "purchase": "Purchase",
    "refund": "Purchase",
    "tax": "Tax",
}
_FREQUENCY = {"usagebased": "Usage-Based", "recurring": "Recurring", "onetime": "One-Time"}
_PRICING = {
    "ondemand": "Standard",
    "spot": "Dynamic",
    "reservation": "Committed",
    "savingsplan": "Committed",
}
_SERVICE_CATEGORY = {
    "compute": "Compute",
    "storage": "Storage",
    "networking": "Networking",
    "databases": "Databases",
    "analytics": "Analytics",
    "ai + machine learning": "AI and Machine Learning",
    "security": "Security",
    "management and governance": "Management and Governance",
    "developer tools": "Developer Tools",
    "integration": "Integration",
    "internet of things": "Internet of Things",
    "web": "Web",
    "containers": "Compute",
}


def parse_date(value: str, formats: tuple[str, ...]) -> datetime | None:
    """A date (or date-time) as Azure writes it, as midnight UTC of that day."""
    text = value.strip()
    for fmt in formats:
        try:
            t = datetime.strptime(text, fmt)
        except ValueError:
            continue
        return datetime(t.year, t.month, t.day, tzinfo=UTC)
    return None


def _formats(options: dict[str, Any]) -> tuple[str, ...]:
    fmt = options.get("date_format")
    return (str(fmt),) if fmt else DATE_FORMATS


class _Columns:
    """Case-insensitive lookup of the export's headers."""

    def __init__(self, names: list[str]) -> None:
        self.by_lower = {n.lower(): n for n in names}
        self.used: set[str] = set()

    def find(self, *names: str) -> str | None:
        for n in names:
            if n.lower() in self.by_lower:
                found = self.by_lower[n.lower()]
                self.used.add(found)
                return found
        return None


def _dates(series: pl.Series, formats: tuple[str, ...]) -> pl.Series:
    values = series.drop_nulls().unique().to_list()
    mapping = {v: parse_date(v, formats) for v in values}
    return series.replace_strict(mapping, default=None, return_dtype=pl.Datetime("us", "UTC"))


def read_azure_cost(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one Azure EA / MCA cost export CSV into `focus_lines` rows."""
    options = dict(options or {})
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise IngestError(f"unknown options {', '.join(unknown)} (known: {', '.join(OPTIONS)})")
    path = Path(path)
    file = str(path)
    df, lines, not_text = read_csv_strings(path, [], encoding_option(options))
    cols = _Columns(df.columns)
    date_col = cols.find(*DATE_COLUMNS)
    cost_col = cols.find(*COST_COLUMNS)
    currency_col = cols.find(*CURRENCY_COLUMNS)
    missing = [
        " or ".join(names)
        for names, found in (
            (DATE_COLUMNS, date_col),
            (COST_COLUMNS, cost_col),
            (CURRENCY_COLUMNS, currency_col),
        )
        if found is None
    ]
    if missing:
        raise IngestError(
            f"Azure cost export lacks columns: {'; '.join(missing)} "
            f"(header: {', '.join(df.columns[:8])}{', ...' if len(df.columns) > 8 else ''})",
            file=file,
            line=1,
        )
    assert date_col and cost_col and currency_col
    formats = _formats(options)
    native = {c: f"n:{c}" for c in df.columns}
    frame = df.rename(native)

    def n(*names: str) -> pl.Expr:
        found = cols.find(*names)
        return pl.col(native[found]) if found else pl.lit(None, pl.String)

    def num(*names: str) -> pl.Expr:
        return n(*names).str.strip_chars().cast(pl.Float64, strict=False)

    def lower_key(expr: pl.Expr) -> pl.Expr:
        return expr.str.strip_chars().str.to_lowercase().str.replace_all(r"[\s_-]", "")

    usage_day = _dates(frame[native[date_col]], formats)
    period_start = (
        _dates(frame[native[s]], formats)
        if (s := cols.find("BillingPeriodStartDate", "BillingPeriodStart"))
        else None
    )
    period_end = (
        _dates(frame[native[e]], formats)
        if (e := cols.find("BillingPeriodEndDate", "BillingPeriodEnd"))
        else None
    )
    frame = frame.with_columns(_day=usage_day)
    month = pl.col("_day").dt.truncate("1mo")
    if period_start is not None:
        frame = frame.with_columns(_ps=period_start)
        start = pl.coalesce(pl.col("_ps"), month)
    else:
        start = month
    if period_end is not None:
        frame = frame.with_columns(_pe=period_end)
        # Azure's end date is the period's last day; an end on the 1st after the start is
        # already exclusive
        exclusive = (
            pl.when((pl.col("_pe").dt.day() == 1) & (pl.col("_pe") > start))
            .then(pl.col("_pe"))
            .otherwise(pl.col("_pe") + timedelta(days=1))
        )
        end = pl.coalesce(exclusive, month.dt.offset_by("1mo"))
    else:
        end = month.dt.offset_by("1mo")
    cost_text = pl.col(native[cost_col])
    cost = cost_text.str.strip_chars().cast(pl.Float64, strict=False)
    quantity = num("Quantity")
    payg, unit_price = num("PayGPrice"), num("UnitPrice")
    charge_type = lower_key(n("ChargeType"))
    pricing_model = lower_key(n("PricingModel"))
    commitment_id = pl.coalesce(n("benefitId"), n("ReservationId"))
    tags = n("Tags").str.strip_chars()
    date_text = pl.col(native[date_col])
    focus = frame.with_columns(
        BilledCost=cost_text,
        EffectiveCost=cost_text,
        ListCost=pl.when(payg > 0).then(payg * quantity).otherwise(cost),
        ContractedCost=pl.coalesce(unit_price * quantity, cost),
        ListUnitPrice=payg,
        ContractedUnitPrice=unit_price,
        # a date that does not parse leaves its text, which FOCUS parsing then rejects
        ChargePeriodStart=pl.coalesce(pl.col("_day").dt.strftime("%Y-%m-%dT%H:%M:%SZ"), date_text),
        ChargePeriodEnd=(pl.col("_day") + timedelta(days=1)).dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        BillingPeriodStart=start.dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        BillingPeriodEnd=end.dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
        BillingCurrency=pl.col(native[currency_col]),
        BillingAccountId=pl.coalesce(n("BillingAccountId"), n("BillingProfileId")),
        BillingAccountName=pl.coalesce(n("BillingAccountName"), n("BillingProfileName")),
        SubAccountId=n("SubscriptionId", "SubscriptionGuid"),
        SubAccountName=n("SubscriptionName"),
        ChargeCategory=charge_type.replace_strict(
            _CHARGE_CATEGORY, default="Adjustment", return_dtype=pl.String
        ),
        ChargeClass=pl.when(charge_type == "refund").then(pl.lit("Correction")),
        ChargeFrequency=lower_key(n("Frequency")).replace_strict(
            _FREQUENCY, default=None, return_dtype=pl.String
        ),
        ChargeDescription=pl.coalesce(n("ProductName", "Product"), n("MeterName")),
        ServiceName=pl.coalesce(n("MeterCategory"), n("ConsumedService")),
        ServiceCategory=n("ServiceFamily")
        .str.strip_chars()
        .str.to_lowercase()
        .replace_strict(_SERVICE_CATEGORY, default="Other", return_dtype=pl.String),
        PricingCategory=pricing_model.replace_strict(
            _PRICING, default=None, return_dtype=pl.String
        ),
        PricingQuantity=quantity,
        ConsumedQuantity=quantity,
        PricingUnit=n("UnitOfMeasure"),
        ConsumedUnit=n("UnitOfMeasure"),
        ResourceId=n("ResourceId", "InstanceId"),
        ResourceName=n("ResourceName"),
        RegionId=n("ResourceLocation").str.to_lowercase().str.replace_all(" ", ""),
        RegionName=pl.coalesce(n("MeterRegion"), n("ResourceLocation")),
        AvailabilityZone=n("AvailabilityZone"),
        SkuId=n("MeterId"),
        SkuPriceId=n("PartNumber"),
        InvoiceId=n("InvoiceId"),
        CommitmentDiscountId=commitment_id,
        CommitmentDiscountName=pl.coalesce(n("benefitName"), n("ReservationName")),
        CommitmentDiscountType=pl.when(commitment_id.is_null())
        .then(None)
        .when(pricing_model == "savingsplan")
        .then(pl.lit("Savings Plan"))
        .otherwise(pl.lit("Reservation")),
        CommitmentDiscountCategory=pl.when(commitment_id.is_null())
        .then(None)
        .when(pricing_model == "savingsplan")
        .then(pl.lit("Spend"))
        .otherwise(pl.lit("Usage")),
        CommitmentDiscountStatus=pl.when(charge_type.str.starts_with("unused"))
        .then(pl.lit("Unused"))
        .when(commitment_id.is_not_null() & (charge_type == "usage"))
        .then(pl.lit("Used")),
        Tags=pl.when(tags.is_null() | (tags == ""))
        .then(None)
        .when(tags.str.starts_with("{"))
        .then(tags)
        .otherwise(pl.concat_str(pl.lit("{"), tags, pl.lit("}"))),
        ProviderName=pl.lit("Microsoft"),
        ServiceProviderName=pl.lit("Microsoft"),
        HostProviderName=pl.lit("Microsoft"),
        InvoiceIssuerName=pl.lit("Microsoft"),
        PublisherName=pl.coalesce(n("PublisherName"), pl.lit("Microsoft")),
    )
    focus_names = [
        c for c in focus.columns if not c.startswith(("n:", "_")) and c not in ("x_line_number",)
    ]
    extras = {native[c]: c for c in df.columns if c not in cols.used}
    return frame_to_focus(
        focus,
        {c: c for c in focus_names},
        extras,
        source=source,
        file=file,
        source_format="azure_cost_csv",
        version=None,
        provider="azure",
        line_numbers=lines,
        raw_columns={native[c]: c for c in df.columns},
        row_reasons=not_text,
    )


def ledger_file(path: str | Path, options: dict[str, Any] | None = None) -> pl.DataFrame:
    """Each row's billing period, currency and cost from the file's text (csv module, Decimal)."""
    formats = _formats(dict(options or {}))
    entries: list[tuple[int, str | None, str | None, float | None]] = []
    lookup: dict[str, str] = {}
    for line, row in csv_dict_rows(Path(path), encoding_option(options)):
        if not lookup:
            lookup = {k.lower(): k for k in row if k}

        def get(
            *names: str, row: dict[str, str] = row, lookup: dict[str, str] = lookup
        ) -> str | None:
            for name in names:
                key = lookup.get(name.lower())
                if key is not None and (row.get(key) or "").strip():
                    return row[key].strip()
            return None

        try:
            amount: Decimal | None = Decimal(get(*COST_COLUMNS) or "x")
        except InvalidOperation:
            amount = None
        start = parse_date(get("BillingPeriodStartDate", "BillingPeriodStart") or "", formats)
        end = parse_date(get("BillingPeriodEndDate", "BillingPeriodEnd") or "", formats)
        day = parse_date(get(*DATE_COLUMNS) or "", formats)
        if start is not None and end is not None:
            period: str | None = (start + (end - start) / 2).strftime("%Y-%m")
        else:
            period = day.strftime("%Y-%m") if day is not None else None
        currency = get(*CURRENCY_COLUMNS)
        entries.append(
            (
                line,
                period,
                currency.upper() if currency else None,
                float(amount) if amount is not None and amount.is_finite() else None,
            )
        )
    return ledger_frame(str(path), entries)
