"""The GCP billing export read from BigQuery with the real google-cloud-bigquery client, pointed
at a local HTTP fake of the BigQuery REST API (tables.get, jobs.query, jobs.get,
jobs.getQueryResults with paging). The fake holds the rows of the two flattened-CSV samples
(the 2020 one as a standard export table, the 2022 one as a detailed export table), answers the
queries by their parameters (invoice months, partition-time window) and pages its results.
Expected numbers come from the sample files (csv module)."""

from __future__ import annotations

import csv
import json
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import polars as pl
import pytest
from test_gcp_billing_files import CSV_2020, CSV_2022, _nested, by_hand, gcp_samples

from fleetledger.config import Config
from ingest.core.errors import IngestError
from ingest.registry import ingest_source

PROJECT = "billing-admin"
DATASET = "billing_export"
STANDARD = "gcp_billing_export_v1_000000_B0BBA4_940A77"
DETAILED = "gcp_billing_export_resource_v1_018984_D0AAA4_940B88"


def _record(name: str, *fields: tuple[str, str], repeated: bool = False) -> dict[str, Any]:
    return {
        "name": name,
        "type": "RECORD",
        "mode": "REPEATED" if repeated else "NULLABLE",
        "fields": [{"name": n, "type": t, "mode": "NULLABLE"} for n, t in fields],
    }


def export_schema(detailed: bool) -> list[dict[str, Any]]:
    s = [
        {"name": "billing_account_id", "type": "STRING"},
        _record("service", ("id", "STRING"), ("description", "STRING")),
        _record("sku", ("id", "STRING"), ("description", "STRING")),
        {"name": "usage_start_time", "type": "TIMESTAMP"},
        {"name": "usage_end_time", "type": "TIMESTAMP"},
        _record("project", ("id", "STRING"), ("name", "STRING")),
        _record("labels", ("key", "STRING"), ("value", "STRING"), repeated=True),
        _record("location", ("location", "STRING"), ("region", "STRING"), ("zone", "STRING")),
        {"name": "export_time", "type": "TIMESTAMP"},
        {"name": "cost", "type": "FLOAT"},
        {"name": "currency", "type": "STRING"},
        {"name": "currency_conversion_rate", "type": "FLOAT"},
        _record(
            "usage",
            ("amount", "FLOAT"),
            ("unit", "STRING"),
            ("amount_in_pricing_units", "FLOAT"),
            ("pricing_unit", "STRING"),
        ),
        _record(
            "credits",
            ("name", "STRING"),
            ("amount", "FLOAT"),
            ("full_name", "STRING"),
            ("id", "STRING"),
            ("type", "STRING"),
            repeated=True,
        ),
        _record("invoice", ("month", "STRING")),
        {"name": "cost_type", "type": "STRING"},
    ]
    if detailed:
        s.append(_record("resource", ("name", "STRING"), ("global_name", "STRING")))
    return s


def _micros(text: str) -> int:
    t = datetime.fromisoformat(text)
    return int(t.timestamp() * 1_000_000)


def _cell(value: Any, field: dict[str, Any]) -> Any:
    """A value in the REST API's `{"f": [{"v": ...}]}` row encoding."""
    if field.get("mode") == "REPEATED":
        item = dict(field, mode="NULLABLE")
        return [{"v": _cell(v, item)} for v in (value or [])]
    if value is None:
        return None
    if field["type"] == "RECORD":
        return {"f": [{"v": _cell(value.get(f["name"]), f)} for f in field["fields"]]}
    if field["type"] == "TIMESTAMP":
        return str(_micros(value))
    return str(value)


def encode(row: dict[str, Any], schema: list[dict[str, Any]]) -> dict[str, Any]:
    return {"f": [{"v": _cell(row.get(f["name"]), f)} for f in schema]}


class FakeBigQuery:
    """Tables of export rows; answers jobs.query by its parameters and pages results."""

    def __init__(self) -> None:
        self.tables: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {}
        self.queries: list[dict[str, Any]] = []
        self.requests: list[str] = []
        self.pages: dict[str, list[dict[str, Any]]] = {}
        self.schemas: dict[str, list[dict[str, Any]]] = {}
        self.lock = threading.Lock()

    def add_table(self, name: str, schema: list[dict[str, Any]], rows: list[dict]) -> None:
        self.tables[name] = (schema, rows)

    # -- query evaluation from the parameters
    def run(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict]]:
        sql = body["query"]
        table = sql.split("`")[1].split(".")[-1]
        schema, rows = self.tables[table]
        params = {p["name"]: p["parameterValue"] for p in body.get("queryParameters", [])}
        months = {v["value"] for v in params["invoice_months"]["arrayValues"]}
        lo = datetime.fromisoformat(params["partition_start"]["value"].replace("Z", "+00:00"))
        hi = datetime.fromisoformat(params["partition_end"]["value"].replace("Z", "+00:00"))

        def partition(row: dict[str, Any]) -> datetime:  # ingestion day = the export day
            t = datetime.fromisoformat(row["export_time"])
            return datetime(t.year, t.month, t.day, tzinfo=UTC)

        picked = [r for r in rows if r["invoice"]["month"] in months and lo <= partition(r) < hi]
        if "GROUP BY" in sql:
            groups: dict[tuple[str, str], list[Decimal]] = {}
            for r in picked:
                key = (r["invoice"]["month"], r["currency"])
                net = Decimal(str(r["cost"])) + sum(
                    (Decimal(str(c["amount"])) for c in r["credits"]), Decimal(0)
                )
                groups.setdefault(key, []).append(net)
            out_schema = [
                {"name": "invoice_month", "type": "STRING"},
                {"name": "currency", "type": "STRING"},
                {"name": "row_count", "type": "INTEGER"},
                {"name": "net_cost", "type": "FLOAT"},
            ]
            out = [
                {"invoice_month": m, "currency": c, "row_count": len(v), "net_cost": float(sum(v))}
                for (m, c), v in sorted(groups.items())
            ]
            return out_schema, out
        columns = sql.split("SELECT ", 1)[1].split("\n", 1)[0].split(", ")
        by_name = {f["name"]: f for f in schema}
        out_schema = [by_name[c] for c in columns]
        return out_schema, [{c: r.get(c) for c in columns} for r in picked]


@pytest.fixture
def fake_bigquery() -> Iterator[tuple[FakeBigQuery, str]]:
    fake = FakeBigQuery()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def _send(self, obj: Any, status: int = 200) -> None:
            body = json.dumps(obj).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def _page(self, job: str, token: str | None, size: int) -> dict[str, Any]:
            schema = fake.schemas[job]
            rows = fake.pages[job]
            start = int(token or 0)
            chunk = rows[start : start + size]
            out: dict[str, Any] = {
                "kind": "bigquery#queryResponse",
                "jobReference": {"projectId": PROJECT, "jobId": job, "location": "US"},
                "jobComplete": True,
                "schema": {"fields": schema},
                "totalRows": str(len(rows)),
                "rows": [encode(r, schema) for r in chunk],
            }
            if start + size < len(rows):
                out["pageToken"] = str(start + size)
            return out

        def do_GET(self) -> None:  # noqa: N802
            url = urlparse(self.path)
            q = parse_qs(url.query)
            parts = url.path.split("/")
            with fake.lock:
                fake.requests.append(f"GET {url.path}")
            if "/tables/" in url.path:
                name = parts[-1]
                if name not in fake.tables:
                    return self._send({"error": {"code": 404, "message": "Not found"}}, 404)
                return self._send(
                    {
                        "tableReference": {
                            "projectId": parts[4],
                            "datasetId": parts[6],
                            "tableId": name,
                        },
                        "schema": {"fields": fake.tables[name][0]},
                    }
                )
            if "/queries/" in url.path:
                size = int(q.get("maxResults", ["1000"])[0])
                return self._send(self._page(parts[-1], q.get("pageToken", [None])[0], size))
            if "/jobs/" in url.path:
                return self._send(
                    {
                        "jobReference": {
                            "projectId": PROJECT,
                            "jobId": parts[-1],
                            "location": "US",
                        },
                        "configuration": {"query": {"query": "-", "useLegacySql": False}},
                        "status": {"state": "DONE"},
                        "statistics": {},
                    }
                )
            self._send({"error": {"code": 404, "message": url.path}}, 404)

        def do_POST(self) -> None:  # noqa: N802
            length = int(self.headers.get("Content-Length", 0))
            body = json.loads(self.rfile.read(length) or b"{}")
            with fake.lock:
                fake.requests.append(f"POST {urlparse(self.path).path}")
                fake.queries.append(body)
                job = f"job{len(fake.queries)}"
                schema, rows = fake.run(body)
                fake.schemas[job], fake.pages[job] = schema, rows
            self._send(self._page(job, None, int(body.get("maxResults") or 1000)))

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def sample_rows(name: str) -> list[dict[str, Any]]:
    with (gcp_samples() / name).open(newline="") as fh:
        return [_nested(r) for r in csv.DictReader(fh)]


def bq_config(endpoint: str, table: str, **options: Any) -> Config:
    return Config.model_validate(
        {
            "sources": [
                {
                    "name": "gcp-bq",
                    "kind": "gcp_billing",
                    "location": f"bigquery://{PROJECT}.{DATASET}.{table}",
                    "options": {"api_endpoint": endpoint, "anonymous": True, **options},
                }
            ]
        }
    )


def test_bigquery_standard_and_detailed_tables(
    tmp_path: Path, fake_bigquery: tuple[FakeBigQuery, str]
) -> None:
    fake, endpoint = fake_bigquery
    rows_2020, rows_2022 = sample_rows(CSV_2020), sample_rows(CSV_2022)
    # both tables also hold the other sample's rows: other invoice months, never read
    fake.add_table(STANDARD, export_schema(False), rows_2020 + rows_2022)
    fake.add_table(DETAILED, export_schema(True), rows_2022 + rows_2020)

    cfg = bq_config(endpoint, STANDARD, page_size=10)
    report = ingest_source(cfg, cfg.source("gcp-bq"), [date(2020, 11, 9)], tmp_path)
    expected = by_hand(gcp_samples() / CSV_2020)["2020-11"]
    assert report.partitions == ["period=2020-11"]
    assert (report.rows_landed, report.rows_quarantined) == (expected["rows"], 0) == (25, 0)
    rows_query, totals_query = fake.queries
    # only the partitions of the month (a day before it to 15 days after) and the month itself
    sql = rows_query["query"]
    assert f"FROM `{PROJECT}.{DATASET}.{STANDARD}`" in sql
    assert "_PARTITIONTIME >= @partition_start AND _PARTITIONTIME < @partition_end" in sql
    assert "invoice.month IN UNNEST(@invoice_months)" in rows_query["query"]
    params = {p["name"]: p["parameterValue"] for p in rows_query["queryParameters"]}
    assert params["invoice_months"] == {"arrayValues": [{"value": "202011"}]}
    assert datetime.fromisoformat(params["partition_start"]["value"]) == datetime(
        2020, 10, 31, tzinfo=UTC
    )
    assert datetime.fromisoformat(params["partition_end"]["value"]) == datetime(
        2020, 12, 16, tzinfo=UTC
    )
    assert "resource" not in rows_query["query"].split("\n")[0]  # the standard table has none
    assert "GROUP BY invoice_month, currency" in totals_query["query"]
    # 25 rows in pages of 10: jobs.query, then two getQueryResults pages
    pages = [r for r in fake.requests if r.startswith("GET") and "/queries/" in r]
    assert len(pages) == 2

    lines = pl.read_parquet(tmp_path / "raw/gcp_billing_lines/gcp-bq/period=2020-11/part-0.parquet")
    assert lines["cost"].sum() == pytest.approx(float(expected["cost"]), abs=1e-12)
    assert lines["credits_amount"].sum() == pytest.approx(float(expected["credits"]), abs=1e-12)
    assert set(lines["x_source_file"]) == {
        f"bigquery://{PROJECT}.{DATASET}.{STANDARD}?invoice_month=202011"
    }
    assert sorted(lines["x_line_number"]) == list(range(1, 26))
    first = (
        lines.filter(pl.col("sku_id") == "143F-A1B0-E0BE")
        .sort("usage_start_time")
        .row(0, named=True)
    )
    assert first["usage_start_time"] == datetime(2020, 11, 8, 8, tzinfo=UTC)
    assert first["labels"] in (
        '{"goog-resource-type": "bigquery_dataset"}',
        '{"goog-resource-type": "bigquery_resource"}',
    )
    totals = pl.read_parquet(
        tmp_path / "raw/billing_source_totals/gcp-bq/period=2020-11/part-0.parquet"
    )
    assert totals.select("currency", "source_rows", "quarantined_rows").rows() == [("USD", 25, 0)]
    assert totals["source_total"][0] == pytest.approx(
        float(expected["cost"] + expected["credits"]), abs=1e-12
    )

    # the detailed table: resource columns selected and landed
    fake.queries.clear()
    cfg = bq_config(endpoint, DETAILED)
    report = ingest_source(cfg, cfg.source("gcp-bq"), [date(2022, 8, 1)], tmp_path)
    # 1 August: July's invoice month is read too (its last Pacific hours are UTC 1 August)
    params = {p["name"]: p["parameterValue"] for p in fake.queries[0]["queryParameters"]}
    assert params["invoice_months"] == {"arrayValues": [{"value": "202207"}, {"value": "202208"}]}
    assert "resource" in fake.queries[0]["query"].split("\n")[0]
    assert report.partitions == ["period=2022-08"]  # July has no rows touching the day
    lines = pl.read_parquet(tmp_path / "raw/gcp_billing_lines/gcp-bq/period=2022-08/part-0.parquet")
    expected = by_hand(gcp_samples() / CSV_2022)["2022-08"]
    assert lines.height == expected["rows"] == 9
    assert lines["cost"].sum() == pytest.approx(float(expected["cost"]))
    assert set(lines["resource_name"]) == {"instance-1"}


def test_bigquery_table_that_is_not_an_export(
    tmp_path: Path, fake_bigquery: tuple[FakeBigQuery, str]
) -> None:
    fake, endpoint = fake_bigquery
    fake.add_table("other", [{"name": "cost", "type": "FLOAT"}], [])
    cfg = bq_config(endpoint, "other")
    with pytest.raises(
        IngestError,
        match=r"bigquery://billing-admin\.billing_export\.other: "
        r"not a billing export table: no column invoice",
    ):
        ingest_source(cfg, cfg.source("gcp-bq"), [date(2020, 11, 9)], tmp_path)
    cfg = bq_config(endpoint, "missing")
    with pytest.raises(IngestError, match="cannot read the table's schema: 404"):
        ingest_source(cfg, cfg.source("gcp-bq"), [date(2020, 11, 9)], tmp_path)
    assert not (tmp_path / "raw/gcp_billing_lines/gcp-bq").exists()
