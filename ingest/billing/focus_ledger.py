"""The FOCUS files' own totals (`ledger_file`): each row's billing period, currency and
BilledCost read straight from the file (the csv module / pyarrow and Decimal), independently of
the mapping to `focus_lines`, for the source-totals reconciliation. `csv_dict_rows` and
`ledger_frame` are shared with the Azure and OCI exports."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest.billing.focus import BY_NORM, norm
from ingest.billing.totals import LEDGER_SCHEMA
from ingest.core.common import decimal_or_none, read_bytes
from ingest.core.text import decode_text, encoding_option

TOTAL_COLUMNS = ("BilledCost", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd")


def _time(value: Any) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).strip().replace("Z", "+00:00")
    try:
        t = datetime.fromisoformat(text)
    except ValueError:
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)


def ledger_period(start: Any, end: Any) -> str | None:
    """The month holding the middle of [start, end), as `YYYY-MM` (end missing: start's)."""
    s = _time(start)
    if s is None:
        return None
    e = _time(end) or s
    return (s + (e - s) / 2).astimezone(UTC).strftime("%Y-%m")


def ledger_frame(
    file: str, entries: list[tuple[int, str | None, str | None, float | None]]
) -> pl.DataFrame:
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


def csv_dict_rows(path: Path, encoding: str | None = None) -> Iterable[tuple[int, dict[str, str]]]:
    """(first line of the row, row) for each non-blank row of a CSV file, with the csv module
    (bytes that are not UTF-8 kept escaped: the row still counts, `ingest.core.text`)."""
    text = decode_text(read_bytes(path), path, encoding).text
    reader = csv.DictReader(io.StringIO(text, newline=""))
    start = 2
    for row in reader:
        lineno, start = start, reader.line_num + 1
        if any((v or "").strip() for v in row.values() if isinstance(v, str)):
            yield lineno, row


def ledger_file(path: str | Path, options: dict[str, Any] | None = None) -> pl.DataFrame:
    """Each row's billing period (`YYYY-MM`), BillingCurrency and BilledCost, read from the
    file with the csv module (Parquet: pyarrow) and Decimal; null where unreadable."""
    options = dict(options or {})
    path = Path(path)
    nulls = {str(v) for v in options.get("null_values", ["NULL"])}
    entries: list[tuple[int, str | None, str | None, float | None]] = []

    def entry(line: int, row: dict[str, Any], cols: dict[str, str]) -> None:
        def get(name: str) -> Any:
            v = row.get(cols[name]) if name in cols else None
            return None if v is None or str(v) in nulls or str(v).strip() == "" else v

        cost = decimal_or_none(get("BilledCost"))
        currency = get("BillingCurrency")
        entries.append(
            (
                line,
                ledger_period(get("BillingPeriodStart"), get("BillingPeriodEnd")),
                str(currency).strip().upper() if currency is not None else None,
                float(cost) if cost is not None else None,
            )
        )

    name = path.name.lower().removesuffix(".gz")
    fmt = str(options.get("format", "auto"))
    if fmt == "parquet" or (fmt == "auto" and name.endswith(".parquet")):
        import pyarrow.parquet as pq

        table = pq.read_table(io.BytesIO(read_bytes(path)))
        cols = {BY_NORM[norm(c)]: c for c in table.column_names if norm(c) in BY_NORM}
        wanted = [cols[c] for c in TOTAL_COLUMNS if c in cols]
        for i, row in enumerate(table.select(wanted).to_pylist(), start=1):
            entry(i, row, cols)
    else:
        cols = {}
        for line, row in csv_dict_rows(path, encoding_option(options)):
            if not cols:
                cols = {BY_NORM[norm(c)]: c for c in row if c and norm(c) in BY_NORM}
            entry(line, row, cols)
    return ledger_frame(str(path), entries)
