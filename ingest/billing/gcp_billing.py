"""GCP billing export rows (standard and detailed/resource schemas) → `gcp_billing_lines`.

The same export rows arrive in three file shapes (`options.format`: `auto` (default, by the
file's name and first bytes), `jsonl`, `csv`, `parquet`):

- JSONL, the BigQuery export's nested shape: `service{id,description}`, `sku`, `project`,
  `labels` (`[{key,value}]`), `location`, `resource{name,global_name}`, `usage`, `credits`
  (`[{name,amount,...}]`), `invoice{month}`.
- CSV flattened by a BigQuery export or a notebook: dotted headers (`service.id`,
  `invoice.month`, `usage.amount_in_pricing_units`, ...) and the repeated fields as list literals,
  JSON or Python repr (`[{'name': 'FreeTrial', 'amount': -5e-06, 'full_name': None}]`).
- Parquet: nested struct/list columns as BigQuery writes them, or flattened dotted columns.

Rows read from BigQuery itself (`ingest/billing/gcp_bigquery.py`) go through the same mapping
(`rows_to_result`). The landing partition is `period=YYYY-MM` from `invoice.month` (`YYYYMM`, a
Pacific-time month). Net cost = `cost + sum(credits.amount)` (credits are negative);
`credits_cud_amount` is the part of it from `COMMITTED_USAGE_DISCOUNT` credits (the evidence that
a resource-based commitment covers the row: the warehouse amortises the fee onto it); `labels`
becomes a JSON object, the project is the sub-account. A row that is not an object, or lacks a
valid invoice month or cost, or has an unparseable time, a number that is not finite (NaN, inf)
or a negative `usage.amount` on a `regular` (metered usage) row, goes to quarantine with the
reason (adjustments and credits keep their negative amounts); a
file that is not in the declared shape at all (not JSON lines, a CSV without `cost` and
`invoice.month`) fails with the file, line and problem.

`ledger_*` compute, independently of the mapping above (Decimal arithmetic on the raw text), each
row's `cost + credits` and invoice month: the source's own totals that the reconciliation check
compares the landed rows with.
"""

from __future__ import annotations

import ast
import csv
import io
import json
import math
import re
from collections.abc import Iterable, Iterator, Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.totals import LEDGER_SCHEMA
from ingest.core.common import ReadResult, decimal_or_none, parse_utc, quarantine_frame, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.core.text import DecodedText, encoding_option, read_text

TABLE = "gcp_billing_lines"
FORMATS = ("auto", "jsonl", "csv", "parquet")
_MONTH = re.compile(r"^(\d{4})(0[1-9]|1[0-2])$")
_TIME_COLUMNS = ("usage_start_time", "usage_end_time", "export_time")
#: a flattened CSV must have these headers
CSV_REQUIRED = ("cost", "invoice.month")
#: repeated fields that flattened files carry as list literals
_LIST_FIELDS = ("labels", "credits")
#: the credit type of a resource-based committed use discount (the usage a commitment covers)
CUD_CREDIT_TYPE = "COMMITTED_USAGE_DISCOUNT"
#: what the source totals sum, in the export's own terms
TOTAL_BASIS = "cost + sum(credits.amount)"


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
    if not math.isfinite(f):
        raise _RowError(f"{what} is not a finite number: {value!r}")
    return f


def _str(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if hasattr(value, "isoformat"):  # datetimes from BigQuery or Parquet
        return str(value.isoformat())
    return str(value)


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


def _credits(value: Any) -> tuple[float, float, str]:
    """(sum of credits.amount, sum of the COMMITTED_USAGE_DISCOUNT credits, credits as JSON)."""
    if value in (None, ""):
        return 0.0, 0.0, "[]"
    if not isinstance(value, list):
        raise _RowError(f"credits is not a list: {value!r}")
    total = cud = 0.0
    for c in value:
        if not isinstance(c, dict):
            raise _RowError(f"credits item is not an object: {c!r}")
        amount = _num(c.get("amount"), "credits.amount", 0.0) or 0.0
        total += amount
        if c.get("type") == CUD_CREDIT_TYPE:
            cud += amount
    return total, cud, json.dumps(value, sort_keys=True, default=str)


def export_row(row: dict[str, Any]) -> dict[str, Any]:
    """One export row (nested shape) as a `gcp_billing_lines` record (times still text)."""
    invoice = _obj(row, "invoice")
    month = _str(invoice.get("month"))
    if month is None or not _MONTH.match(month.strip()):
        raise _RowError(f"invoice.month is not YYYYMM: {month!r}")
    cost = _num(row.get("cost"), "cost")
    if cost is None:
        raise _RowError("no cost")
    service, sku, project = _obj(row, "service"), _obj(row, "sku"), _obj(row, "project")
    location, resource, usage = _obj(row, "location"), _obj(row, "resource"), _obj(row, "usage")
    credits_amount, credits_cud_amount, credits = _credits(row.get("credits"))
    usage_amount = _num(usage.get("amount"), "usage.amount")
    cost_type = _str(row.get("cost_type"))
    if usage_amount is not None and usage_amount < 0 and cost_type in (None, "regular"):
        # usage is metered, never negative; adjustments and corrections may carry one
        raise _RowError(
            f"negative usage.amount on a {cost_type or 'regular'} row: {usage_amount!r}"
        )
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
        "usage_amount": usage_amount,
        "usage_unit": _str(usage.get("unit")),
        "usage_amount_in_pricing_units": _num(
            usage.get("amount_in_pricing_units"), "usage.amount_in_pricing_units"
        ),
        "usage_pricing_unit": _str(usage.get("pricing_unit")),
        "credits_amount": credits_amount,
        "credits_cud_amount": credits_cud_amount,
        "credits": credits,
        "invoice_month": month.strip(),
        "cost_type": cost_type,
        "cost_at_list": _num(row.get("cost_at_list"), "cost_at_list"),
        "export_time": _str(row.get("export_time")),
    }


# a record handed to rows_to_result: (line number, the row or why it could not be read, raw text)
Record = tuple[int, "dict[str, Any] | _RowError", str]


def rows_to_result(records: Iterable[Record], *, source: str, file: str) -> ReadResult:
    """Map export rows to `gcp_billing_lines`; rows that break a rule go to quarantine."""
    schema = polars_schema(TABLE)
    data_cols = [c for c in schema if not c.startswith("x_")]
    cols: dict[str, list[Any]] = {c: [] for c in data_cols}
    lines: list[int] = []
    raws: list[str] = []
    q_lines: list[int] = []
    q_reasons: list[str] = []
    q_raws: list[str] = []
    for lineno, obj, raw in records:
        try:
            if isinstance(obj, _RowError):
                raise obj
            rec = export_row(obj)
        except _RowError as err:
            q_lines.append(lineno)
            q_reasons.append(str(err))
            q_raws.append(raw)
            continue
        for c in data_cols:
            cols[c].append(rec[c])
        lines.append(lineno)
        raws.append(raw)
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


# --------------------------------------------------------------------------- JSONL


def parse_jsonl(
    text: str, *, source: str, file: str, bad_lines: Mapping[int, str] | None = None
) -> ReadResult:
    """Export rows from JSON lines; `bad_lines` (not valid text) are quarantined."""
    records: list[Record] = []
    json_errors: list[tuple[int, str]] = []
    parsed_any = False
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        if bad_lines and lineno in bad_lines:
            records.append((lineno, _RowError(bad_lines[lineno]), line))
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as err:
            reason = f"not valid JSON: {err.msg} at column {err.colno}"
            json_errors.append((lineno, reason))
            records.append((lineno, _RowError(reason), line))
            continue
        if not isinstance(obj, dict):
            records.append((lineno, _RowError("line is not a JSON object"), line))
            continue
        parsed_any = True
        records.append((lineno, obj, line))
    if not parsed_any and json_errors and len(json_errors) == len(records):
        line, reason = json_errors[0]
        raise IngestError(f"not JSON lines: {reason}", file=file, line=line)
    return rows_to_result(records, source=source, file=file)


def read_gcp_billing_jsonl(
    path: str | Path, *, source: str, encoding: str | None = None
) -> ReadResult:
    """Read one JSONL export file (plain or gzip) into `gcp_billing_lines` rows."""
    path = Path(path)
    decoded = read_text(path, encoding)
    return parse_jsonl(decoded.text, source=source, file=str(path), bad_lines=decoded.bad_lines)


# --------------------------------------------------------------------------- flattened CSV


def _list_literal(text: str, what: str) -> Any:
    """A repeated field as a flattened file writes it: JSON, or a Python literal (single
    quotes, None) as a notebook's `str(list)` leaves it. Parsed with ast.literal_eval, which
    evaluates literals only."""
    text = text.strip()
    if not text:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        pass
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError, MemoryError, RecursionError):
        raise _RowError(f"{what} is not a list literal: {text[:80]!r}") from None


def unflatten(flat: dict[str, Any]) -> dict[str, Any]:
    """`{"service.id": "x", "cost": 1}` → `{"service": {"id": "x"}, "cost": 1}`; empty strings
    become None; `labels` / `credits` list literals are parsed."""
    out: dict[str, Any] = {}
    for key, value in flat.items():
        if key is None:
            continue
        if value == "":
            value = None
        if key in _LIST_FIELDS and isinstance(value, str):
            value = _list_literal(value, key)
        parts = key.split(".")
        node = out
        for p in parts[:-1]:
            child = node.get(p)
            if not isinstance(child, dict):
                child = {}
                node[p] = child
            node = child
        node[parts[-1]] = value
    return out


def _csv_text(path: Path, encoding: str | None = None) -> DecodedText:
    return read_text(path, encoding)


def _csv_line(values: list[str]) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="").writerow(values)
    return out.getvalue()


def _csv_records(
    text: str, file: str, bad_lines: Mapping[int, str] | None = None
) -> Iterator[Record]:
    reader = csv.reader(io.StringIO(text, newline=""))
    try:
        header = next(reader)
    except StopIteration:
        return
    except csv.Error as err:
        raise IngestError(f"not CSV: {err}", file=file, line=1) from None
    if bad_lines and 1 in bad_lines:
        raise IngestError(f"header: {bad_lines[1]}", file=file, line=1)
    header = [h.strip() for h in header]
    missing = [c for c in CSV_REQUIRED if c not in header]
    if missing:
        raise IngestError(
            f"GCP billing CSV lacks columns {missing} (header: {', '.join(header[:8])}"
            f"{', ...' if len(header) > 8 else ''})",
            file=file,
            line=1,
        )
    start = 2
    while True:
        try:
            values = next(reader)
        except StopIteration:
            return
        except csv.Error as err:
            raise IngestError(f"not CSV: {err}", file=file, line=reader.line_num) from None
        lineno, start = start, reader.line_num + 1
        if not values or all(not v.strip() for v in values):
            continue
        raw = _csv_line(values)
        not_text = [n for n in range(lineno, reader.line_num + 1) if n in (bad_lines or {})]
        if not_text:
            yield lineno, _RowError(f"line {not_text[0]}: {bad_lines[not_text[0]]}"), raw  # type: ignore[index]
            continue
        if len(values) != len(header):
            yield (
                lineno,
                _RowError(f"{len(values)} fields where the header has {len(header)}"),
                raw,
            )
            continue
        try:
            yield lineno, unflatten(dict(zip(header, values, strict=True))), raw
        except _RowError as err:
            yield lineno, err, raw


def read_gcp_billing_csv(
    path: str | Path, *, source: str, encoding: str | None = None
) -> ReadResult:
    """Read a flattened CSV export (dotted headers, list literals) into `gcp_billing_lines`;
    a row on a line with bytes that are not UTF-8 (unless `encoding` says the file's
    encoding) is quarantined with the bytes escaped."""
    path = Path(path)
    decoded = _csv_text(path, encoding)
    records = _csv_records(decoded.text, str(path), decoded.bad_lines)
    return rows_to_result(records, source=source, file=str(path))


# --------------------------------------------------------------------------- Parquet


def _parquet_rows(path: Path) -> list[dict[str, Any]]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(io.BytesIO(read_bytes(path)))
    except (pa.ArrowInvalid, OSError) as err:
        raise IngestError(f"not a readable Parquet file: {err}", file=path) from None
    names = table.column_names
    if "cost" not in names or not ({"invoice", "invoice.month"} & set(names)):
        raise IngestError(
            f"GCP billing Parquet lacks columns cost and invoice.month (has {names[:8]})",
            file=path,
        )
    return table.to_pylist()


def read_gcp_billing_parquet(path: str | Path, *, source: str) -> ReadResult:
    """Read a Parquet export (nested or dotted columns); line = row index + 1."""
    path = Path(path)

    def records() -> Iterator[Record]:
        for i, row in enumerate(_parquet_rows(path), start=1):
            raw = json.dumps(row, default=str)
            try:
                yield i, unflatten(row), raw
            except _RowError as err:
                yield i, err, raw

    return rows_to_result(records(), source=source, file=str(path))


# --------------------------------------------------------------------------- dispatch


def file_format(path: Path, declared: str = "auto") -> str:
    if declared not in FORMATS:
        raise IngestError(f"option format must be one of {', '.join(FORMATS)}, got {declared!r}")
    if declared != "auto":
        return declared
    name = path.name.lower().removesuffix(".gz")
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    head = read_bytes(path)[:4]
    if head == b"PAR1":
        return "parquet"
    return "jsonl" if head.lstrip()[:1] == b"{" else "csv"


def read_gcp_billing_file(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one export file in any of the supported shapes (`options.format`)."""
    path = Path(path)
    fmt = file_format(path, str((options or {}).get("format", "auto")))
    encoding = encoding_option(options)
    if fmt == "csv":
        return read_gcp_billing_csv(path, source=source, encoding=encoding)
    if fmt == "parquet":
        return read_gcp_billing_parquet(path, source=source)
    return read_gcp_billing_jsonl(path, source=source, encoding=encoding)


def period_of(invoice_month: pl.Expr) -> pl.Expr:
    """`YYYYMM` → `YYYY-MM`."""
    return pl.concat_str(invoice_month.str.slice(0, 4), pl.lit("-"), invoice_month.str.slice(4, 2))


# --------------------------------------------------------------------------- source totals

_AMOUNT = re.compile(r"""["']amount["']\s*:\s*(-?[0-9][0-9.]*(?:[eE][-+]?[0-9]+)?)""")
_AMOUNT_KEY = re.compile(r"""["']amount["']\s*:""")


def _period(month: Any) -> str | None:
    m = _MONTH.match(str(month).strip()) if month is not None else None
    return f"{m.group(1)}-{m.group(2)}" if m else None


def _ledger_entry(cost: Any, credit_amounts: list[Any] | None, month: Any) -> tuple:
    c = decimal_or_none(cost)
    credits = [decimal_or_none(a) for a in (credit_amounts or [])]
    amount = None if c is None or any(a is None for a in credits) else c + sum(credits, Decimal(0))
    return _period(month), (float(amount) if amount is not None else None)


def _ledger_frame(file: str, entries: list[tuple[int, str | None, str | None, float | None]]):
    return pl.DataFrame(
        {
            "x_source_file": [file] * len(entries),
            "x_line_number": [e[0] for e in entries],
            "period": [e[1] for e in entries],
            "currency": [e[2] for e in entries],
            "amount": [e[3] for e in entries],
        },
        schema=LEDGER_SCHEMA,
    )


def ledger_file(path: str | Path, options: dict[str, Any] | None = None) -> pl.DataFrame:
    """Each source row's invoice month (`YYYY-MM`), currency and `cost + credits`, read from
    the file's own text with Decimal arithmetic (null where the row cannot be read)."""
    path = Path(path)
    fmt = file_format(path, str((options or {}).get("format", "auto")))
    entries: list[tuple[int, str | None, str | None, float | None]] = []
    encoding = encoding_option(options)
    if fmt == "jsonl":
        text = read_text(path, encoding).text
        for lineno, line in enumerate(text.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line, parse_float=Decimal)
            except json.JSONDecodeError:
                entries.append((lineno, None, None, None))
                continue
            if not isinstance(obj, dict):
                entries.append((lineno, None, None, None))
                continue
            inv = obj.get("invoice") if isinstance(obj.get("invoice"), dict) else {}
            credits = obj.get("credits") if isinstance(obj.get("credits"), list) else []
            amounts = [c.get("amount") if isinstance(c, dict) else "x" for c in credits]
            period, amount = _ledger_entry(obj.get("cost"), amounts, inv.get("month"))
            entries.append((lineno, period, obj.get("currency"), amount))
    elif fmt == "csv":
        reader = csv.DictReader(io.StringIO(_csv_text(path, encoding).text, newline=""))
        start = 2
        for row in reader:
            lineno, start = start, reader.line_num + 1
            if not any((v or "").strip() for v in row.values() if isinstance(v, str)):
                continue
            credits_text = row.get("credits") or ""
            amounts: list[Any] = _AMOUNT.findall(credits_text)
            if len(amounts) != len(_AMOUNT_KEY.findall(credits_text)):
                amounts.append("unreadable")  # an amount that is not a number
            period, amount = _ledger_entry(row.get("cost"), amounts, row.get("invoice.month"))
            entries.append((lineno, period, row.get("currency") or None, amount))
    else:
        for i, row in enumerate(_parquet_rows(path), start=1):
            inv = row.get("invoice")
            month = inv.get("month") if isinstance(inv, dict) else row.get("invoice.month")
            credits = row.get("credits") or []
            amounts = [c.get("amount") if isinstance(c, dict) else "x" for c in credits]
            period, amount = _ledger_entry(row.get("cost"), amounts, month)
            entries.append((i, period, row.get("currency"), amount))
    return _ledger_frame(str(path), entries)
