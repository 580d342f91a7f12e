"""The data files of a CUR delivery: decompress and parse them (CSV or Parquet), type their
columns from the manifest, map legacy names, check the columns a manifest promises, and the
cost measures and per-service totals of a delivery's rows."""

from __future__ import annotations

import gzip
import io
import zipfile
import zlib
from typing import Any

import polars as pl

from ingest.billing.aws_cur_legacy import json_string, legacy_name
from ingest.billing.tables import CUR_COLUMNS, CUR_MAP_COLUMNS
from ingest.core.common import parse_utc
from ingest.core.errors import IngestError

_KNOWN = dict(CUR_COLUMNS)
#: line types that meter usage: a negative usage amount on them is impossible (refunds,
#: credits, fees and negations may carry one, and land)
USAGE_LINE_TYPES = ("Usage", "DiscountedUsage", "SavingsPlanCoveredUsage")


def _gunzip(data: bytes, uri: str) -> bytes:
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as err:
        raise IngestError(f"corrupt or truncated gzip data: {err}", file=uri) from None


def _unzip(data: bytes, uri: str) -> bytes:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            names = [n for n in z.namelist() if not n.endswith("/")]
            if len(names) != 1:
                raise IngestError(f"zip holds {len(names)} files, expected one CSV", file=uri)
            return z.read(names[0])
    except (zipfile.BadZipFile, OSError, EOFError, zlib.error) as err:
        raise IngestError(f"corrupt or truncated zip data: {err}", file=uri) from None


def _first_line(err: Exception) -> str:
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def parse_data_file(data: bytes, uri: str) -> tuple[pl.DataFrame, bool]:
    """A CUR data file's rows (every column as delivered) and whether they came as text."""
    name = uri.lower().split("?", 1)[0]
    if name.endswith(".parquet"):
        import pyarrow as pa
        import pyarrow.parquet as pq

        try:
            table = pq.read_table(pa.BufferReader(data))
        except Exception as err:  # pyarrow raises ArrowInvalid / OSError for damaged files
            raise IngestError(
                f"cannot read Parquet (truncated or corrupt?): {_first_line(err)}", file=uri
            ) from None
        return pl.from_arrow(table), False  # type: ignore[return-value]
    if name.endswith((".csv.gz", ".csv", ".gz", ".csv.zip", ".zip")):
        if data[:2] == b"\x1f\x8b":
            data = _gunzip(data, uri)
        elif data[:4] == b"PK\x03\x04":
            data = _unzip(data, uri)
        elif name.endswith((".gz", ".zip")):
            raise IngestError("not gzip or zip data (bad magic number)", file=uri)
        try:
            return pl.read_csv(data, infer_schema=False, raise_if_empty=False), True
        except Exception as err:  # polars parse errors
            raise IngestError(f"cannot parse CSV: {_first_line(err)}", file=uri) from None
    raise IngestError(f"manifest lists a file of unknown format: {uri}")


# --------------------------------------------------------------------------- normalisation


_TYPE_WORDS = {
    "double": pl.Float64,
    "float": pl.Float64,
    "decimal": pl.Float64,
    "bigdecimal": pl.Float64,
    "optionalbigdecimal": pl.Float64,
    "bigint": pl.Int64,
    "int": pl.Int64,
    "integer": pl.Int64,
    "timestamp": "ts",
    "datetime": "ts",
    "date": "ts",
}


def manifest_columns(manifest: dict[str, Any], fmt: str) -> list[tuple[str, str]]:
    """(header as in the data file, declared type) of every column the manifest lists."""
    out: list[tuple[str, str]] = []
    for c in manifest.get("columns") or []:
        if not isinstance(c, dict) or "name" not in c:
            continue
        name = str(c["name"])
        if fmt == "legacy" and c.get("category"):
            name = f"{c['category']}/{name}"
        out.append((name, str(c.get("type", ""))))
    return out


def manifest_types(columns: list[tuple[str, str]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, type_ in columns:
        t = type_.lower()
        target = _TYPE_WORDS.get(t)
        if target is None:
            for word, tgt in _TYPE_WORDS.items():
                if t.startswith(word):
                    target = tgt
                    break
        if target is not None:
            out[legacy_name(name) if "/" in name else name] = target
    return out


def _map_to_json(col: str, dtype: pl.DataType) -> pl.Expr:
    c = pl.col(col)
    if isinstance(dtype, pl.Map):  # polars >= 2 keeps Arrow maps as maps
        dtype = pl.List(pl.Struct({"key": dtype.key, "value": dtype.value}))
        c = c.cast(dtype)
    if isinstance(dtype, pl.List) and isinstance(dtype.inner, pl.Struct):
        fields = [f.name for f in dtype.inner.fields]
        key, value = (fields[0], fields[1]) if len(fields) >= 2 else ("key", "value")
        pairs = c.list.eval(
            pl.concat_str(
                json_string(pl.element().struct.field(key).cast(pl.String)),
                pl.lit(":"),
                json_string(pl.element().struct.field(value)),
            )
        )
        return pl.concat_str(pl.lit("{"), pairs.list.join(","), pl.lit("}")).alias(col)
    if isinstance(dtype, pl.Struct):
        return c.struct.json_encode().alias(col)
    return c.cast(pl.String).alias(col)


def normalise(df: pl.DataFrame, text: bool, mtypes: dict[str, Any]) -> pl.DataFrame:
    """Cast to CUR types; adds `_reject`, the reason a row is quarantined: a CSV cell that does
    not parse, a number that is not finite (NaN, inf), a negative usage amount on a usage line
    (`USAGE_LINE_TYPES`)."""
    exprs: list[pl.Expr] = []
    checks: list[tuple[str, pl.Expr]] = []
    for name, dtype in df.schema.items():
        c = pl.col(name)
        if name in CUR_MAP_COLUMNS:
            exprs.append(_map_to_json(name, dtype))
            continue
        target: Any = None
        if name in _KNOWN:
            k = _KNOWN[name]
            target = (
                "ts"
                if str(k).startswith("timestamp")
                else (pl.Float64 if str(k) == "double" else pl.String)
            )
        elif text:
            target = mtypes.get(name)
        elif isinstance(dtype, pl.Datetime):
            target = "ts"
        elif isinstance(dtype, pl.Map):
            exprs.append(_map_to_json(name, dtype))
            continue
        if target is None:
            if isinstance(dtype, pl.Categorical | pl.Enum):
                exprs.append(c.cast(pl.String))
            continue
        if target == "ts":
            if isinstance(dtype, pl.Datetime):
                e = c.dt.replace_time_zone("UTC") if dtype.time_zone is None else c
                e = e.dt.convert_time_zone("UTC").dt.cast_time_unit("us")
            elif isinstance(dtype, pl.Date):
                e = c.cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
            else:
                s = c.cast(pl.String)
                e = parse_utc(pl.when(s.str.strip_chars() == "").then(None).otherwise(s))
                checks.append((name, s.str.strip_chars().ne("").fill_null(False) & e.is_null()))
            exprs.append(e.alias(name))
        elif target == pl.String:
            exprs.append(c.cast(pl.String))
        else:
            if dtype == pl.String:
                s = c.str.strip_chars()
                e = pl.when(s == "").then(None).otherwise(s).cast(target, strict=False)
                checks.append((f"unparseable {name}", s.ne("").fill_null(False) & e.is_null()))
            else:
                e = c.cast(target, strict=False)
            if target == pl.Float64:
                not_finite = (e.is_nan() | e.is_infinite()).fill_null(False)
                checks.append((f"{name} is not a finite number", not_finite))
            exprs.append(e.alias(name))
    reason: pl.Expr = pl.lit(None, pl.String)
    for text, bad in reversed(checks):
        reason = pl.when(bad).then(pl.lit(text)).otherwise(reason)
    # the checks read the input columns, so they are evaluated in the same step as the casts
    out = df.with_columns(*exprs, reason.alias("_reject"))
    if {"line_item_usage_amount", "line_item_line_item_type"} <= set(out.columns):
        usage = pl.col("line_item_usage_amount")
        line_type = pl.col("line_item_line_item_type").cast(pl.String)
        negative = (usage < 0) & line_type.is_in(USAGE_LINE_TYPES)
        out = out.with_columns(
            pl.coalesce(
                pl.col("_reject"),
                pl.when(negative.fill_null(False)).then(
                    pl.concat_str(
                        pl.lit("negative line_item_usage_amount on a "),
                        line_type,
                        pl.lit(" line: "),
                        usage.cast(pl.String),
                    )
                ),
            ).alias("_reject")
        )
    return out


def check_columns(columns: list[str], expected: list[str], uri: str, manifest_uri: str) -> None:
    if expected:
        want = set(expected)
        have = set(columns)
        missing = [c for c in expected if c not in have]
        extra = [c for c in columns if c not in want]
        if missing or extra:
            detail = []
            if missing:
                detail.append(f"missing {', '.join(missing)}")
            if extra:
                detail.append(f"not in the manifest {', '.join(extra)}")
            raise IngestError(
                f"columns differ from the manifest {manifest_uri} (renamed or dropped column?): "
                + "; ".join(detail),
                file=uri,
            )


def empty_rows() -> pl.DataFrame:
    return pl.DataFrame(
        schema={
            "x_execution_id": pl.String,
            "x_billing_period": pl.String,
            "x_source": pl.String,
            "x_source_file": pl.String,
            "x_line_number": pl.Int64,
        }
    )


# --------------------------------------------------------------------------- reading


def _num(rows: pl.DataFrame, name: str) -> pl.Expr:
    if name in rows.columns:
        return pl.col(name).cast(pl.Float64, strict=False)
    return pl.lit(None, pl.Float64)


def cost_expressions(rows: pl.DataFrame) -> dict[str, pl.Expr]:
    """Billed, effective (amortised) and list cost of each line, as `int_billing__aws.sql`
    computes them (the CUR query library's rules by line item type)."""
    line_type = (
        pl.col("line_item_line_item_type").cast(pl.String)
        if "line_item_line_item_type" in rows.columns
        else pl.lit(None, pl.String)
    )
    unblended = _num(rows, "line_item_unblended_cost")
    effective = (
        pl.when(line_type == "SavingsPlanCoveredUsage")
        .then(_num(rows, "savings_plan_savings_plan_effective_cost"))
        .when(line_type == "SavingsPlanRecurringFee")
        .then(
            _num(rows, "savings_plan_total_commitment_to_date")
            - _num(rows, "savings_plan_used_commitment")
        )
        .when(line_type.is_in(["SavingsPlanNegation", "SavingsPlanUpfrontFee"]))
        .then(pl.lit(0.0))
        .when(line_type == "DiscountedUsage")
        .then(_num(rows, "reservation_effective_cost"))
        .when(line_type == "RIFee")
        .then(
            _num(rows, "reservation_unused_amortized_upfront_fee_for_billing_period").fill_null(0)
            + _num(rows, "reservation_unused_recurring_fee").fill_null(0)
        )
        .otherwise(unblended)
    )
    return {
        "billed_cost": pl.coalesce(_num(rows, "line_item_net_unblended_cost"), unblended),
        "effective_cost": effective,
        "list_cost": pl.coalesce(_num(rows, "pricing_public_on_demand_cost"), unblended),
    }


def totals_by_service(rows: pl.DataFrame) -> pl.DataFrame:
    """Lines and billed / effective / list cost per service (`line_item_product_code`) and
    currency: what a delivery said, kept for `fct_billing_restatements`."""
    schema = {
        "service": pl.String,
        "currency": pl.String,
        "line_count": pl.Int64,
        "billed_cost": pl.Float64,
        "effective_cost": pl.Float64,
        "list_cost": pl.Float64,
    }
    if not rows.height:
        return pl.DataFrame(schema=schema)

    def text(name: str) -> pl.Expr:
        if name in rows.columns:
            return pl.col(name).cast(pl.String).fill_null("")
        return pl.lit("", pl.String)

    costs = cost_expressions(rows)
    return (
        rows.select(
            text("line_item_product_code").alias("service"),
            text("line_item_currency_code").alias("currency"),
            *(e.alias(k) for k, e in costs.items()),
        )
        .group_by("service", "currency")
        .agg(
            pl.len().cast(pl.Int64).alias("line_count"),
            pl.col("billed_cost").sum(),
            pl.col("effective_cost").sum(),
            pl.col("list_cost").sum(),
        )
        .sort("service", "currency")
        .select(list(schema))
        .cast(schema)  # type: ignore[arg-type]
    )
