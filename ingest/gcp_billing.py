"""GCP billing export rows as JSONL (the BigQuery export's nested shape) → `gcp_billing_lines`.

Each line is one export row: nested `service{id,description}`, `sku`, `project`, `labels`
(`[{key,value}]`), `location`, `resource{name,global_name}`, `usage`, `credits`
(`[{name,amount,...}]`), `invoice{month}`. The landing partition is `period=YYYY-MM` from
`invoice.month` (`YYYYMM`). Lines that are not JSON objects, or lack a valid invoice month or
cost, go to quarantine.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import polars as pl

from ingest.common import ReadResult, parse_utc, quarantine_frame, read_bytes
from ingest.errors import IngestError
from ingest.landing import polars_schema

TABLE = "gcp_billing_lines"
_MONTH = re.compile(r"^(\d{4})(0[1-9]|1[0-2])$")
_TIME_COLUMNS = ("usage_start_time", "usage_end_time", "export_time")


class _RowError(ValueError):
    pass


def _obj(row: dict[str, Any], key: str) -> dict[str, Any]:
    v = row.get(key)
    return v if isinstance(v, dict) else {}


def _num(value: Any, what: str, default: float | None = None) -> float | None:
    if value is None or value == "":
        return default
    try:
        f = float(value)
    except (TypeError, ValueError):
        raise _RowError(f"{what} is not a number: {value!r}") from None
    if math.isnan(f):
        raise _RowError(f"{what} is NaN")
    return f


def _str(value: Any) -> str | None:
    if value is None:
        return None
    return value if isinstance(value, str) else str(value)


def _labels(value: Any) -> str:
    if value in (None, ""):
        return "{}"
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True)
    if not isinstance(value, list):
        raise _RowError(f"labels is not a key/value list: {value!r}")
    out: dict[str, Any] = {}
    for item in value:
        if not isinstance(item, dict) or "key" not in item:
            raise _RowError(f"labels item is not {{key, value}}: {item!r}")
        out[str(item["key"])] = item.get("value")
    return json.dumps(out, sort_keys=True)


def _credits(value: Any) -> tuple[float, str]:
    if value in (None, ""):
        return 0.0, "[]"
    if not isinstance(value, list):
        raise _RowError(f"credits is not a list: {value!r}")
    total = 0.0
    for c in value:
        if not isinstance(c, dict):
            raise _RowError(f"credits item is not an object: {c!r}")
        total += _num(c.get("amount"), "credits.amount", 0.0) or 0.0
    return total, json.dumps(value, sort_keys=True)


def _row(row: dict[str, Any]) -> dict[str, Any]:
    invoice = _obj(row, "invoice")
    month = _str(invoice.get("month"))
    if month is None or not _MONTH.match(month.strip()):
        raise _RowError(f"invoice.month is not YYYYMM: {month!r}")
    cost = _num(row.get("cost"), "cost")
    if cost is None:
        raise _RowError("no cost")
    service, sku, project = _obj(row, "service"), _obj(row, "sku"), _obj(row, "project")
    location, resource, usage = _obj(row, "location"), _obj(row, "resource"), _obj(row, "usage")
    credits_amount, credits = _credits(row.get("credits"))
    return {
        "billing_account_id": _str(row.get("billing_account_id")),
        "service_id": _str(service.get("id")),
        "service_description": _str(service.get("description")),
        "sku_id": _str(sku.get("id")),
        "sku_description": _str(sku.get("description")),
        "usage_start_time": _str(row.get("usage_start_time")),
        "usage_end_time": _str(row.get("usage_end_time")),
        "project_id": _str(project.get("id")),
        "project_name": _str(project.get("name")),
        "labels": _labels(row.get("labels")),
        "location_region": _str(location.get("region")),
        "location_zone": _str(location.get("zone")),
        "resource_name": _str(resource.get("name")),
        "resource_global_name": _str(resource.get("global_name")),
        "cost": cost,
        "currency": _str(row.get("currency")),
        "currency_conversion_rate": _num(row.get("currency_conversion_rate"), "rate"),
        "usage_amount": _num(usage.get("amount"), "usage.amount"),
        "usage_unit": _str(usage.get("unit")),
        "usage_amount_in_pricing_units": _num(
            usage.get("amount_in_pricing_units"), "usage.amount_in_pricing_units"
        ),
        "usage_pricing_unit": _str(usage.get("pricing_unit")),
        "credits_amount": credits_amount,
        "credits": credits,
        "invoice_month": month.strip(),
        "cost_type": _str(row.get("cost_type")),
        "cost_at_list": _num(row.get("cost_at_list"), "cost_at_list"),
        "export_time": _str(row.get("export_time")),
    }


def parse_jsonl(text: str, *, source: str, file: str) -> ReadResult:
    schema = polars_schema(TABLE)
    data_cols = [c for c in schema if not c.startswith("x_")]
    cols: dict[str, list[Any]] = {c: [] for c in data_cols}
    lines: list[int] = []
    raws: list[str] = []
    q_lines: list[int] = []
    q_reasons: list[str] = []
    q_raws: list[str] = []
    parsed_any = False
    json_errors = 0
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise _RowError("line is not a JSON object")
            rec = _row(obj)
        except json.JSONDecodeError as err:
            json_errors += 1
            q_lines.append(lineno)
            q_reasons.append(f"not valid JSON: {err.msg} at column {err.colno}")
            q_raws.append(line)
            continue
        except _RowError as err:
            q_lines.append(lineno)
            q_reasons.append(str(err))
            q_raws.append(line)
            continue
        for c in data_cols:
            cols[c].append(rec[c])
        parsed_any = True
        lines.append(lineno)
        raws.append(line)
    if not parsed_any and q_lines and json_errors == len(q_lines):
        raise IngestError(f"not JSON lines: {q_reasons[0]}", file=file, line=q_lines[0])
    str_schema = {c: (pl.String if c in _TIME_COLUMNS else schema[c]) for c in data_cols}
    df = pl.DataFrame(cols, schema=str_schema).with_columns(
        x_source=pl.lit(source, pl.String),
        x_source_file=pl.lit(file, pl.String),
        x_line_number=pl.Series(lines, dtype=pl.Int64),
        _raw=pl.Series(raws, dtype=pl.String),
    )
    parsed = df.with_columns([parse_utc(pl.col(c)).alias(f"_{c}") for c in _TIME_COLUMNS])
    bad_time = pl.any_horizontal(
        [pl.col(c).is_not_null() & pl.col(f"_{c}").is_null() for c in _TIME_COLUMNS]
    )
    bad = parsed.filter(bad_time)
    if bad.height:
        for r in bad.iter_rows(named=True):
            which = [c for c in _TIME_COLUMNS if r[c] is not None and r[f"_{c}"] is None]
            q_lines.append(r["x_line_number"])
            q_reasons.append(f"unparseable time in {which[0]}: {r[which[0]]!r}")
            q_raws.append(r["_raw"])
    rows = (
        parsed.filter(~bad_time)
        .with_columns([pl.col(f"_{c}").alias(c) for c in _TIME_COLUMNS])
        .select(list(schema))
    )
    quarantine = quarantine_frame(source, file, q_lines, q_reasons, q_raws).sort("x_line_number")
    return ReadResult(rows, quarantine, files=[file])


def read_gcp_billing_jsonl(path: str | Path, *, source: str) -> ReadResult:
    """Read one JSONL export file (plain or gzip) into `gcp_billing_lines` rows."""
    path = Path(path)
    text = read_bytes(path).decode("utf-8", errors="replace")
    return parse_jsonl(text, source=source, file=str(path))


def period_of(invoice_month: pl.Expr) -> pl.Expr:
    """`YYYYMM` → `YYYY-MM`."""
    return pl.concat_str(invoice_month.str.slice(0, 4), pl.lit("-"), invoice_month.str.slice(4, 2))
