"""GCP billing export rows queried from BigQuery → `gcp_billing_lines` (google-cloud-bigquery).

Source: `kind: gcp_billing`, `location: bigquery://<project>.<dataset>.<table>` — the standard
(`gcp_billing_export_v1_<ACCOUNT>`) or detailed (`gcp_billing_export_resource_v1_<ACCOUNT>`)
export table. Options:

- `project`: the project that runs (and pays for) the query jobs; default the table's project.
- `location`: the dataset's location (`US`, `EU`, ...), when the client cannot infer it.
- `credentials_file`: a service-account key file; default Application Default Credentials.
  `anonymous: true` uses anonymous credentials (an emulator or a test fake).
- `api_endpoint`: another endpoint than `https://bigquery.googleapis.com` (emulators, tests).
- `partition_column` (default `_PARTITIONTIME`, the export tables' ingestion-time partitioning;
  `none` for a table without it) with `early_days` (default 1) and `late_days` (default 15): only
  the partitions from `early_days` before the first requested invoice month to `late_days` after
  the last one are scanned (a month's late rows, taxes and adjustments are exported into the
  following days); `invoice.month IN UNNEST(@invoice_months)` then picks the months exactly.
- `page_size` (default 50000): rows per result page.

The table's schema is read first (tables.get): only the export's columns the table has are
selected (the detailed table adds `resource`; `cost_at_list` is newer than some tables), and
`cost` and `invoice` must be there. Rows map through `ingest.billing.gcp_billing.rows_to_result`, so
both shapes land the same columns as export files. Lineage: `x_source_file` is
`bigquery://<table>?invoice_month=YYYYMM`, `x_line_number` the row's position in that month's
result (unique within a landing; BigQuery returns rows in no fixed order).

Source totals: a second query groups the same filter by invoice month and currency (row count,
`SUM(cost)` + the credits), the table's own totals for the reconciliation checks.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

import polars as pl

from ingest.billing.gcp_billing import TABLE, Record, rows_to_result
from ingest.billing.google_auth import google_credentials
from ingest.billing.totals import LEDGER_SCHEMA
from ingest.core.common import ReadResult
from ingest.core.errors import IngestError

OPTIONS = (
    "project",
    "location",
    "credentials_file",
    "anonymous",
    "api_endpoint",
    "partition_column",
    "early_days",
    "late_days",
    "page_size",
)
#: the export's top-level columns fleetledger reads, in the order they are selected
EXPORT_COLUMNS = (
    "billing_account_id",
    "service",
    "sku",
    "usage_start_time",
    "usage_end_time",
    "project",
    "labels",
    "location",
    "resource",
    "export_time",
    "cost",
    "currency",
    "currency_conversion_rate",
    "usage",
    "credits",
    "invoice",
    "cost_type",
    "cost_at_list",
)
REQUIRED_COLUMNS = ("cost", "invoice")
_TABLE = re.compile(r"^bigquery://([A-Za-z0-9_.:-]+)\.([A-Za-z0-9_]+)\.([A-Za-z0-9_$-]+)$")
_COLUMN = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass
class BigQueryRead:
    result: ReadResult
    ledger: pl.DataFrame  # per row: x_source_file, x_line_number, period, currency, amount
    aggregates: pl.DataFrame  # per month and currency: x_source_file, period, currency, rows,
    # amount (the table's own totals)
    sql: str
    totals_sql: str


def parse_location(location: str) -> str:
    """`bigquery://project.dataset.table` → `project.dataset.table`."""
    m = _TABLE.match(location.strip())
    if not m:
        raise IngestError(
            f"not a BigQuery table location (bigquery://<project>.<dataset>.<table>): {location}"
        )
    return ".".join(m.groups())


def invoice_months_for(days: list[date]) -> list[str]:
    """The invoice months (`YYYYMM`) that can hold usage of the UTC `days`: each day's month,
    and the previous month for the 1st (its first hours are still the previous month in
    Pacific time)."""
    months = set()
    for d in days:
        months.add(d.strftime("%Y%m"))
        if d.day == 1:
            months.add((d - timedelta(days=1)).strftime("%Y%m"))
    return sorted(months)


def _month_start(month: str) -> datetime:
    return datetime(int(month[:4]), int(month[4:]), 1, tzinfo=UTC)


def _next_month(month: str) -> datetime:
    return (_month_start(month) + timedelta(days=32)).replace(day=1)


def _int_option(options: dict[str, Any], name: str, default: int) -> int:
    value = options.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise IngestError(f"option {name} must be a whole number >= 0, got {value!r}")
    return value


def make_client(table: str, options: dict[str, Any]) -> Any:
    """A google-cloud-bigquery Client for the source's options."""
    from google.cloud import bigquery

    project = str(options.get("project") or table.split(".")[0])
    kwargs: dict[str, Any] = {"project": project}
    credentials = google_credentials(options)
    if credentials is not None:
        kwargs["credentials"] = credentials
    if options.get("api_endpoint"):
        kwargs["client_options"] = {"api_endpoint": str(options["api_endpoint"])}
    if options.get("location"):
        kwargs["location"] = str(options["location"])
    return bigquery.Client(**kwargs)


def build_queries(
    table: str, columns: list[str], months: list[str], options: dict[str, Any]
) -> tuple[str, str, list[Any]]:
    """(rows query, totals query, query parameters) for the invoice `months` (`YYYYMM`)."""
    from google.cloud import bigquery

    for c in columns:
        if not _COLUMN.match(c):
            raise IngestError(f"unexpected column name in {table}: {c!r}")
    partition = str(options.get("partition_column", "_PARTITIONTIME"))
    if partition.lower() != "none" and not _COLUMN.match(partition):
        raise IngestError(f"option partition_column is not a column name: {partition!r}")
    early = _int_option(options, "early_days", 1)
    late = _int_option(options, "late_days", 15)
    where = ["invoice.month IN UNNEST(@invoice_months)"]
    params: list[Any] = [bigquery.ArrayQueryParameter("invoice_months", "STRING", months)]
    if partition.lower() != "none":
        where.append(f"{partition} >= @partition_start AND {partition} < @partition_end")
        params += [
            bigquery.ScalarQueryParameter(
                "partition_start", "TIMESTAMP", _month_start(months[0]) - timedelta(days=early)
            ),
            bigquery.ScalarQueryParameter(
                "partition_end", "TIMESTAMP", _next_month(months[-1]) + timedelta(days=late)
            ),
        ]
    condition = "\n  AND ".join(where)
    sql = f"SELECT {', '.join(columns)}\nFROM `{table}`\nWHERE {condition}"
    credits = (
        "IFNULL((SELECT SUM(c.amount) FROM UNNEST(credits) AS c), 0)"
        if "credits" in columns
        else "0"
    )
    currency = "currency" if "currency" in columns else "CAST(NULL AS STRING)"
    totals_sql = (
        f"SELECT invoice.month AS invoice_month, {currency} AS currency, "
        f"COUNT(*) AS row_count, SUM(cost + {credits}) AS net_cost\n"
        f"FROM `{table}`\nWHERE {condition}\nGROUP BY invoice_month, currency"
    )
    return sql, totals_sql, params


def _amount(row: dict[str, Any]) -> float | None:
    try:
        total = Decimal(str(row.get("cost")))
        for c in row.get("credits") or []:
            amount = c.get("amount") if isinstance(c, dict) else None
            if amount is not None:
                total += Decimal(str(amount))
    except (InvalidOperation, TypeError):
        return None
    return float(total) if total.is_finite() else None


def _month_of(row: dict[str, Any]) -> str | None:
    invoice = row.get("invoice")
    month = invoice.get("month") if isinstance(invoice, dict) else None
    return str(month) if month is not None else None


def read_bigquery(location: str, *, source: str, months: list[str], **options: Any) -> BigQueryRead:
    """Query the export table for the invoice `months` (`YYYYMM`); see the module docstring."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise IngestError(f"unknown options {', '.join(unknown)} (known: {', '.join(OPTIONS)})")
    from google.api_core import exceptions as gexc
    from google.cloud import bigquery

    table = parse_location(location)
    months = sorted(set(months))
    if not months:
        raise IngestError(f"{location}: no invoice months to read")
    page_size = _int_option(options, "page_size", 50_000) or 50_000
    client = make_client(table, options)
    try:
        schema = client.get_table(table).schema
    except gexc.GoogleAPIError as err:
        raise IngestError(f"cannot read the table's schema: {err}", file=location) from None
    present = {f.name for f in schema}
    missing = [c for c in REQUIRED_COLUMNS if c not in present]
    if missing:
        raise IngestError(
            f"not a billing export table: no column {', '.join(missing)} "
            f"(has {', '.join(sorted(present)[:10])})",
            file=location,
        )
    columns = [c for c in EXPORT_COLUMNS if c in present]
    sql, totals_sql, params = build_queries(table, columns, months, options)
    config = bigquery.QueryJobConfig(query_parameters=params)
    job_location = options.get("location")
    try:
        rows = client.query_and_wait(
            sql, job_config=config, location=job_location, page_size=page_size
        )
        records_by_month: dict[str | None, list[dict[str, Any]]] = {}
        for row in rows:
            record = dict(row.items())
            records_by_month.setdefault(_month_of(record), []).append(record)
        totals = client.query_and_wait(
            totals_sql,
            job_config=bigquery.QueryJobConfig(query_parameters=params),
            location=job_location,
        )
        aggregates = [dict(r.items()) for r in totals]
    except gexc.GoogleAPIError as err:
        raise IngestError(f"BigQuery query failed: {err}", file=location) from None

    results: list[ReadResult] = []
    ledger: list[tuple[str, int, str | None, str | None, float | None]] = []
    for month in sorted(records_by_month, key=lambda m: m or ""):
        file = f"bigquery://{table}?invoice_month={month}"
        batch: list[Record] = []
        for i, record in enumerate(records_by_month[month], start=1):
            raw = json.dumps(record, default=str, sort_keys=True)
            batch.append((i, record, raw))
            period = f"{month[:4]}-{month[4:]}" if month and len(month) == 6 else None
            ledger.append((file, i, period, record.get("currency"), _amount(record)))
        results.append(rows_to_result(batch, source=source, file=file))
    result = ReadResult.concat(TABLE, results)
    if not result.files:
        result.files = [f"bigquery://{table}"]
    ledger_frame = pl.DataFrame(ledger, schema=LEDGER_SCHEMA, orient="row")
    agg_frame = pl.DataFrame(
        [
            (
                f"bigquery://{table}?invoice_month={a['invoice_month']}",
                f"{str(a['invoice_month'])[:4]}-{str(a['invoice_month'])[4:]}",
                a.get("currency"),
                int(a["row_count"]),
                float(a["net_cost"]) if a.get("net_cost") is not None else 0.0,
            )
            for a in aggregates
        ],
        schema={
            "x_source_file": pl.String,
            "period": pl.String,
            "currency": pl.String,
            "rows": pl.Int64,
            "amount": pl.Float64,
        },
        orient="row",
    )
    return BigQueryRead(result, ledger_frame, agg_frame, sql, totals_sql)
