"""FOCUS 1.0–1.3 cost and usage files (CSV or Parquet, any provider) → `focus_lines`.

- Columns are matched to the FOCUS names ignoring case and `_` (`billed_cost` is BilledCost);
  FOCUS columns a file lacks land null; columns that are not FOCUS columns (`Id`, provider
  `x_*` columns) are kept in `x_extra` as a JSON object.
- Version (`options.focus_version`: `auto` (default), `1.0`, `1.1`, `1.2`, `1.3`): `auto` takes
  1.3 when the file has ServiceProviderName or HostProviderName, else 1.2 / 1.1 / 1.0 by the
  columns those versions added. The mandatory columns of that version must all be present
  (1.3 makes ServiceProviderName and HostProviderName mandatory instead of the deprecated
  ProviderName and PublisherName); otherwise the file fails, naming the file and the missing
  columns (and a near-miss header, e.g. a renamed column), and nothing of it is landed. Both
  ProviderName and ServiceProviderName are kept as delivered.
- Empty cells are nulls, quoted (`""`, as exporters that quote every field write them) or
  not. Negative costs and quantities land: credits, refunds and corrections carry them (the
  FOCUS sample data has Azure usage corrections with a negative ConsumedQuantity).
- Text is UTF-8 (with or without a byte-order mark) unless `options.encoding` names another
  encoding; a row on a line with bytes that are not UTF-8 is quarantined with the bytes shown
  escaped (never replaced).
- Literal `NULL` cells are nulls (`options.null_values`, default `["NULL"]`); times are ISO 8601
  (`2024-09-01T00:00:00Z` or `2024-09-01 00:00:00`, naive = UTC).
- Rows go to quarantine, with the reason, when BilledCost, BillingCurrency (an ISO 4217 code),
  BillingPeriodStart/End or ChargePeriodStart/End is empty or unparseable, when a cost, price
  or quantity is not a number or not finite (`NaN`, `inf`), or when neither ServiceProviderName
  nor ProviderName names the provider (unless `options.provider` does). Tags (and the other
  JSON columns) that are not a JSON object land null, with a warning.
- Enumerated values are normalised to the spec's spelling when they differ only in case
  (`Usage-based` → `Usage-Based`).
- `x_provider`: aws | azure | gcp | oci from ServiceProviderName (else ProviderName), else the
  name in lowercase (`CoreWeave` → `coreweave`); `options.provider` overrides it.
- `x_billing_period` (the landing partition, `period=YYYY-MM`): the month holding the middle of
  [BillingPeriodStart, BillingPeriodEnd), so a period that starts at local midnight still lands
  under its own month.

`frame_to_focus` is shared with the Azure and OCI readers, which map their native exports onto
FOCUS names first. `ledger_file` reads each row's BilledCost, currency and billing period with
the csv module and Decimal, independently, for the source totals.
"""

from __future__ import annotations

import difflib
import io
import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.tables import FOCUS_COLUMNS
from ingest.core.common import ReadResult, parse_utc, quarantine_from, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import empty_quarantine, polars_schema
from ingest.core.text import decode_text, encoding_option, row_reasons

TABLE = "focus_lines"
VERSIONS = ("1.0", "1.1", "1.2", "1.3")
OPTIONS = ("format", "focus_version", "null_values", "provider", "encoding")
TOTAL_BASIS = "BilledCost"

MANDATORY_1_0 = (
    "BilledCost",
    "BillingAccountId",
    "BillingAccountName",
    "BillingCurrency",
    "BillingPeriodEnd",
    "BillingPeriodStart",
    "ChargeCategory",
    "ChargeClass",
    "ChargeDescription",
    "ChargePeriodEnd",
    "ChargePeriodStart",
    "ContractedCost",
    "EffectiveCost",
    "InvoiceIssuerName",
    "ListCost",
    "PricingQuantity",
    "PricingUnit",
    "ProviderName",
    "PublisherName",
    "ServiceCategory",
    "ServiceName",
)
MANDATORY: dict[str, tuple[str, ...]] = {
    "1.0": MANDATORY_1_0,
    "1.1": MANDATORY_1_0,
    "1.2": MANDATORY_1_0,
    "1.3": tuple(c for c in MANDATORY_1_0 if c not in ("ProviderName", "PublisherName"))
    + ("ServiceProviderName", "HostProviderName"),
}
# columns a version introduced: how `auto` tells versions apart
_INTRODUCED = {
    "1.3": (
        "ServiceProviderName",
        "HostProviderName",
        "AllocatedMethodId",
        "AllocatedMethodDetails",
        "AllocatedResourceId",
        "AllocatedResourceName",
        "AllocatedTags",
    ),
    "1.2": (
        "BillingAccountType",
        "SubAccountType",
        "InvoiceId",
        "PricingCurrency",
        "PricingCurrencyContractedUnitPrice",
        "PricingCurrencyEffectiveCost",
        "PricingCurrencyListUnitPrice",
    ),
    "1.1": (
        "CapacityReservationId",
        "CapacityReservationStatus",
        "CommitmentDiscountQuantity",
        "CommitmentDiscountUnit",
        "ServiceSubcategory",
        "SkuMeter",
        "SkuPriceDetails",
    ),
}
_TYPES = dict(FOCUS_COLUMNS)
NAMES = [n for n, _ in FOCUS_COLUMNS]
NUMERIC = [n for n, t in FOCUS_COLUMNS if str(t) == "double"]
TIMES = ("BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart", "ChargePeriodEnd")
JSON_COLUMNS = ("Tags", "SkuPriceDetails", "AllocatedMethodDetails", "AllocatedTags")
#: cells that must be present and valid for a row to land
REQUIRED_VALUES = ("BilledCost", "BillingCurrency", *TIMES)
ENUMS: dict[str, tuple[str, ...]] = {
    "ChargeCategory": ("Usage", "Purchase", "Tax", "Credit", "Adjustment"),
    "ChargeClass": ("Correction",),
    "ChargeFrequency": ("One-Time", "Recurring", "Usage-Based"),
    "PricingCategory": ("Standard", "Dynamic", "Committed", "Other"),
    "CommitmentDiscountStatus": ("Used", "Unused"),
    "CommitmentDiscountCategory": ("Spend", "Usage"),
    "CapacityReservationStatus": ("Used", "Unused"),
}
PROVIDERS = {
    "aws": "aws",
    "amazon": "aws",
    "amazon web services": "aws",
    "amazon web services, inc.": "aws",
    "microsoft": "azure",
    "azure": "azure",
    "microsoft azure": "azure",
    "google": "gcp",
    "google cloud": "gcp",
    "google cloud platform": "gcp",
    "gcp": "gcp",
    "oracle": "oci",
    "oci": "oci",
    "oracle cloud infrastructure": "oci",
}


def norm(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


BY_NORM = {norm(n): n for n in NAMES}


def provider_slug(name: str | None) -> str | None:
    """aws | azure | gcp | oci for the big four, else the name lowercased with `-`."""
    if name is None or not name.strip():
        return None
    key = name.strip().lower()
    if key in PROVIDERS:
        return PROVIDERS[key]
    return re.sub(r"[^a-z0-9]+", "-", key).strip("-") or None


def match_columns(columns: Iterable[str], file: str) -> tuple[dict[str, str], list[str]]:
    """(original → FOCUS name for the FOCUS columns, the other columns). Two columns that
    match one FOCUS name are an error."""
    mapping: dict[str, str] = {}
    extras: list[str] = []
    seen: dict[str, str] = {}
    for col in columns:
        canonical = None if col.lower().startswith("x_") else BY_NORM.get(norm(col))
        if canonical is None:
            extras.append(col)
            continue
        if canonical in seen:
            raise IngestError(
                f"columns {seen[canonical]!r} and {col!r} are both FOCUS {canonical}",
                file=file,
                line=1,
            )
        seen[canonical] = col
        mapping[col] = canonical
    return mapping, extras


def detect_version(present: set[str], declared: str = "auto") -> str:
    if declared != "auto":
        if declared not in VERSIONS:
            raise IngestError(
                f"option focus_version must be auto or one of {', '.join(VERSIONS)}, "
                f"got {declared!r}"
            )
        return declared
    for version in ("1.3", "1.2", "1.1"):
        if present & set(_INTRODUCED[version]):
            return version
    return "1.0"


def check_mandatory(version: str, present: set[str], extras: list[str], file: str) -> None:
    missing = [c for c in MANDATORY[version] if c not in present]
    if not missing:
        return
    hints = []
    for m in missing:
        close = difflib.get_close_matches(norm(m), [norm(e) for e in extras], n=1, cutoff=0.75)
        if close:
            original = next(e for e in extras if norm(e) == close[0])
            hints.append(f"{original!r} for {m}?")
    hint = f" (renamed? {'; '.join(hints)})" if hints else ""
    raise IngestError(
        f"FOCUS {version} file lacks mandatory column{'s' if len(missing) > 1 else ''} "
        f"{', '.join(missing)}{hint}",
        file=file,
        line=1,
    )


# --------------------------------------------------------------------------- reading


def read_csv_strings(
    path: Path, null_values: list[str], encoding: str | None = None
) -> tuple[pl.DataFrame, pl.Series, pl.Series]:
    """A CSV file (plain or gzip; UTF-8 with or without a byte-order mark, unless `encoding`
    says otherwise) with every column as text, each row's physical line number (quoted fields
    may span lines), and per row why it is not valid text (bytes that are not UTF-8, shown
    escaped; else null: `ingest.core.text`); blank lines are dropped."""
    decoded = decode_text(read_bytes(path), path, encoding)
    if 1 in decoded.bad_lines:
        raise IngestError(f"header: {decoded.bad_lines[1]}", file=path, line=1)
    data = decoded.text.encode("utf-8")
    if not data.strip():
        raise IngestError("empty file (no header)", file=path, line=1)
    try:
        df = pl.read_csv(io.BytesIO(data), infer_schema=False, null_values=null_values or None)
    except (pl.exceptions.ComputeError, pl.exceptions.NoDataError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise IngestError(f"not a readable CSV file: {first}", file=path) from None
    if not df.columns:
        empty = pl.Series("line", [], dtype=pl.Int64)
        return df, empty, empty.cast(pl.String)
    breaks = pl.sum_horizontal(
        pl.col(c).str.count_matches("\n").fill_null(0) for c in df.columns
    ).cast(pl.Int64)
    lines = (pl.lit(2, pl.Int64) + pl.int_range(pl.len(), dtype=pl.Int64)) + (
        breaks.cum_sum() - breaks
    )
    blank = pl.all_horizontal(pl.col(c).is_null() for c in df.columns)
    with_lines = df.with_columns(lines.alias("__line"), blank.alias("__blank"))
    # a blank line between rows still ends the row before it
    reasons = row_reasons(with_lines["__line"], decoded.bad_lines)
    kept = with_lines.with_columns(reasons.alias("__bad")).filter(~pl.col("__blank"))
    return kept.drop("__line", "__blank", "__bad"), kept["__line"], kept["__bad"]


def read_table_file(
    path: Path, fmt: str, null_values: list[str], encoding: str | None = None
) -> tuple[pl.DataFrame, str, pl.Series, pl.Series | None]:
    """A CSV (every column as text) or Parquet file as a frame, with its line numbers (CSV:
    the physical line a row starts on; Parquet: row index + 1) and, for CSV, why a row is not
    valid text; (frame, csv | parquet, lines, reasons)."""
    if fmt == "auto":
        name = path.name.lower().removesuffix(".gz")
        fmt = "parquet" if name.endswith(".parquet") or read_bytes(path)[:4] == b"PAR1" else "csv"
    if fmt == "parquet":
        try:
            df = pl.read_parquet(io.BytesIO(read_bytes(path)))
        except (pl.exceptions.ComputeError, OSError) as err:
            raise IngestError(f"not a readable Parquet file: {err}", file=path) from None
        return df, "parquet", pl.int_range(1, df.height + 1, dtype=pl.Int64, eager=True), None
    if fmt != "csv":
        raise IngestError(f"option format must be auto, csv or parquet, got {fmt!r}")
    df, lines, reasons = read_csv_strings(path, null_values, encoding)
    return df, "csv", lines, reasons


def _check_options(options: dict[str, Any], allowed: Iterable[str]) -> None:
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise IngestError(
            f"unknown option{'s' if len(unknown) > 1 else ''} {', '.join(unknown)} "
            f"(known: {', '.join(allowed)})"
        )


def read_focus_file(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one FOCUS file into `focus_lines` rows (see the module docstring)."""
    options = dict(options or {})
    _check_options(options, OPTIONS)
    path = Path(path)
    file = str(path)
    null_values = [str(v) for v in options.get("null_values", ["NULL"])]
    df, fmt, lines, not_text = read_table_file(
        path, str(options.get("format", "auto")), null_values, encoding_option(options)
    )
    mapping, extras = match_columns(df.columns, file)
    present = set(mapping.values())
    version = detect_version(present, str(options.get("focus_version", "auto")))
    check_mandatory(version, present, extras, file)
    if fmt == "parquet" and null_values:
        df = df.with_columns(
            pl.when(pl.col(c).is_in(null_values)).then(None).otherwise(pl.col(c)).alias(c)
            for c, t in df.schema.items()
            if t == pl.String
        )
    return frame_to_focus(
        df,
        mapping,
        {e: e for e in extras},
        source=source,
        file=file,
        source_format=f"focus_{fmt}",
        version=version,
        provider=options.get("provider"),
        line_numbers=lines,
        row_reasons=not_text,
    )


# --------------------------------------------------------------------------- mapping


def _as_float(col: str, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.String:
        return pl.col(col).str.strip_chars().cast(pl.Float64, strict=False)
    if dtype.is_numeric():
        return pl.col(col).cast(pl.Float64)
    return pl.col(col).cast(pl.String).cast(pl.Float64, strict=False)


def _as_time(col: str, dtype: pl.DataType) -> pl.Expr:
    if isinstance(dtype, pl.Datetime):
        e = pl.col(col)
        e = e.dt.replace_time_zone("UTC") if dtype.time_zone is None else e
        return e.dt.convert_time_zone("UTC").dt.cast_time_unit("us")
    if dtype == pl.Date:
        return pl.col(col).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    return parse_utc(pl.col(col).cast(pl.String))


def _to_json(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, pl.Series):
        value = value.to_list()
    if isinstance(value, list) and all(
        isinstance(i, dict) and set(i) == {"key", "value"} for i in value
    ):
        value = {i["key"]: i["value"] for i in value}  # a Parquet map column
    return json.dumps(value, default=str)


def _as_text(col: str, dtype: pl.DataType) -> pl.Expr:
    if dtype == pl.String:
        return pl.col(col)
    if isinstance(dtype, pl.Struct):
        return pl.col(col).struct.json_encode()
    if isinstance(dtype, pl.List | pl.Array):
        return pl.col(col).map_elements(_to_json, return_dtype=pl.String)
    return pl.col(col).cast(pl.String)


def _json_object_or_null(values: pl.Series) -> tuple[pl.Series, int, int | None]:
    """Keep JSON object strings, null the rest; returns (series, how many nulled, first index)."""
    ok: dict[str, str | None] = {}
    for v in values.drop_nulls().unique().to_list():
        try:
            parsed = json.loads(v)
        except (TypeError, ValueError):
            parsed = None
        ok[v] = v if isinstance(parsed, dict) else None
    bad_values = [k for k, v in ok.items() if v is None]
    if not bad_values:
        return values, 0, None
    bad_mask = values.is_in(bad_values)
    first = int(bad_mask.arg_true()[0])
    fixed = values.replace_strict(ok, default=None, return_dtype=pl.String)
    return fixed, int(bad_mask.sum()), first


def _normalise_enum(col: str, allowed: tuple[str, ...]) -> pl.Expr:
    lower = pl.col(col).str.strip_chars().str.to_lowercase()
    mapping = {a.lower(): a for a in allowed}
    return (
        pl.when(lower.is_in(list(mapping)))
        .then(lower.replace_strict(mapping, default=None, return_dtype=pl.String))
        .otherwise(pl.col(col))
    )


def frame_to_focus(
    df: pl.DataFrame,
    mapping: dict[str, str],
    extras: dict[str, str],
    *,
    source: str,
    file: str,
    source_format: str,
    version: str | None,
    line_numbers: pl.Series,
    provider: str | None = None,
    raw_columns: dict[str, str] | None = None,
    row_reasons: pl.Series | None = None,
) -> ReadResult:
    """Map a frame whose columns `mapping` names onto FOCUS columns (frame column → FOCUS name)
    into `focus_lines` rows (casting, parsing, validating); rows that break a rule go to
    quarantine with the row as JSON (`raw_columns`: frame column → name shown; default: every
    column). `extras` (frame column → key) are kept in `x_extra`. `row_reasons` (one per row,
    null for a good row) quarantine rows the file itself marks bad (not valid text)."""
    schema = polars_schema(TABLE)
    lines = line_numbers.cast(pl.Int64)
    shown = raw_columns if raw_columns is not None else {c: c for c in df.columns}
    raw = (
        pl.struct(pl.col(c).cast(pl.String).alias(k) for c, k in shown.items()).struct.json_encode()
        if shown
        else pl.lit("{}", pl.String)
    )
    by_focus = {focus: orig for orig, focus in mapping.items()}
    values: list[pl.Expr] = []
    reasons: list[pl.Expr] = []  # per rule: the reason when the row breaks it, else null
    for name in NAMES:
        orig = by_focus.get(name)
        if orig is None:
            values.append(pl.lit(None, dtype=schema[name]).alias(name))
            continue
        dtype = df.schema[orig]
        text = pl.col(orig).cast(pl.String)
        if name in NUMERIC:
            value = _as_float(orig, dtype)
            what = f"{name} is not a number: "
        elif name in TIMES:
            value = _as_time(orig, dtype)
            what = f"unparseable time in {name}: "
        else:
            value = _as_text(orig, dtype)
            value = pl.when(value.str.strip_chars() == "").then(None).otherwise(value)
            what = ""
        if what:
            # an empty cell is null whether it was quoted (`""`) or not
            given = pl.col(orig).is_not_null() & (text.str.strip_chars() != "")
            reasons.append(pl.when(given & value.is_null()).then(pl.concat_str(pl.lit(what), text)))
        if name in NUMERIC:
            reasons.append(
                pl.when(value.is_nan() | value.is_infinite()).then(
                    pl.concat_str(pl.lit(f"{name} is not a finite number: "), text)
                )
            )
        values.append(value.alias(name))
    extra_json = (
        pl.struct(
            pl.col(c).cast(pl.String).alias(k) for c, k in extras.items()
        ).struct.json_encode()
        if extras
        else pl.lit(None, pl.String)
    )
    mapped = df.select(
        *values,
        pl.coalesce(reasons).alias("_cast_reason")
        if reasons
        else pl.lit(None, pl.String).alias("_cast_reason"),
        extra_json.alias("x_extra"),
        raw.alias("_raw"),
    ).with_columns(
        x_line_number=lines,
        _text_reason=(row_reasons if row_reasons is not None else pl.lit(None, pl.String)),
    )
    currency = pl.col("BillingCurrency").str.strip_chars().str.to_uppercase()
    mapped = mapped.with_columns(
        currency.alias("BillingCurrency"),
        *[_normalise_enum(c, allowed).alias(c) for c, allowed in ENUMS.items()],
    )
    required = [pl.when(pl.col(c).is_null()).then(pl.lit(f"{c} is empty")) for c in REQUIRED_VALUES]
    bad_currency = pl.when(~pl.col("BillingCurrency").str.contains(r"^[A-Z]{3}$")).then(
        pl.concat_str(
            pl.lit("BillingCurrency is not an ISO 4217 code: "), pl.col("BillingCurrency")
        )
    )
    if not provider:  # the line's provider names it in fct_billing
        required.append(
            pl.when(
                pl.col("ServiceProviderName").is_null() & pl.col("ProviderName").is_null()
            ).then(pl.lit("ServiceProviderName and ProviderName are empty"))
        )
    mapped = mapped.with_columns(
        _reason=pl.coalesce(pl.col("_text_reason"), pl.col("_cast_reason"), *required, bad_currency)
    )
    bad_rows = mapped.filter(pl.col("_reason").is_not_null())
    good = mapped.filter(pl.col("_reason").is_null())
    warnings: list[str] = []
    for col in JSON_COLUMNS:
        fixed, count, first = _json_object_or_null(good[col])
        if count:
            line = good["x_line_number"][first]
            warnings.append(
                f"{file}: {col} is not a JSON object in {count} rows; landed null "
                f"(first: line {line})"
            )
            good = good.with_columns(fixed.alias(col))
    provider_name = pl.coalesce(pl.col("ServiceProviderName"), pl.col("ProviderName"))
    if provider:
        x_provider = pl.lit(str(provider), pl.String)
    else:
        names = good.select(provider_name.unique()).to_series().drop_nulls().to_list()
        x_provider = provider_name.replace_strict(
            {v: provider_slug(v) for v in names}, default=None, return_dtype=pl.String
        )
    start = pl.col("BillingPeriodStart")
    middle = start + (pl.col("BillingPeriodEnd").fill_null(start) - start) / 2
    rows = good.with_columns(
        x_provider=x_provider,
        x_source_format=pl.lit(source_format, pl.String),
        x_focus_version=pl.lit(version, pl.String),
        x_billing_period=middle.dt.strftime("%Y-%m"),
        x_source=pl.lit(source, pl.String),
        x_source_file=pl.lit(file, pl.String),
    ).select(list(schema))
    rows = rows.cast(dict(schema))
    quarantine = (
        quarantine_from(
            bad_rows.with_columns(
                x_source=pl.lit(source, pl.String), x_source_file=pl.lit(file, pl.String)
            ),
            pl.col("_reason"),
            pl.col("_raw"),
        )
        if bad_rows.height
        else empty_quarantine()
    )
    return ReadResult(rows, quarantine, warnings=warnings, files=[file])


# --------------------------------------------------------------------------- source totals
