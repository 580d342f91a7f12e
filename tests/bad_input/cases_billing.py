"""Corpus cases for the billing kinds: `aws_cur` (a local CUR 2.0 export folder), `gcp_billing`
(JSON lines, the real flattened CSV sample), `focus`, `azure_cost` and `oci_cost` (the real
samples in shared/samples), `gcp_catalog` (the Cloud Billing API). Billing sources land every
row of each billing period that holds a requested day, so counts are rows per period: the
FOCUS sample's first 10 rows are all of 2024-09, the Azure EA sample's 11 rows of 2023-09, the
OCI sample's 506 rows of 2023-11, the GCP CSV sample's 9 rows of 2022-08."""

from __future__ import annotations

import csv
import io
import json
from datetime import date
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from inputs import D1, gcp_file, gcp_row, samples_dir, source, write
from runner import Case, Expect, Setup

# ------------------------------------------------------------------------------ AWS CUR 2.0

PERIOD = "2026-11"
EXPORT = "fleet-cur"


def _parquet(costs: list[float], cost_column: str = "line_item_unblended_cost") -> bytes:
    sink = io.BytesIO()
    table = pa.table(
        {
            cost_column: costs,
            "resource_tags": pa.array(
                [[("team", "a")]] * len(costs), type=pa.map_(pa.string(), pa.string())
            ),
        }
    )
    pq.write_table(table, sink)
    return sink.getvalue()


def _cur(data: bytes | None = None, listed: list[str] | None = None, **options: Any) -> Any:
    """A local CUR 2.0 export: one data file of 2 lines ($1, $2) named in the manifest."""

    def build(folder: Path) -> Setup:
        base = folder / "cur" / EXPORT
        name = f"{EXPORT}-00001.snappy.parquet"
        write(
            base / "data" / f"BILLING_PERIOD={PERIOD}" / name,
            data if data is not None else _parquet([1.0, 2.0]),
        )
        files = listed if listed is not None else [name]
        manifest = {
            "executionId": "e1",
            "dataFiles": [
                f"s3://bkt/cur2/{EXPORT}/data/BILLING_PERIOD={PERIOD}/{f}" for f in files
            ],
        }
        write(
            base / "metadata" / f"BILLING_PERIOD={PERIOD}" / f"{EXPORT}-Manifest.json",
            json.dumps(manifest),
        )
        return Setup(
            {"sources": [source("aws", "aws_cur", f"cur/{EXPORT}", **options)]}, "aws", (D1,)
        )

    return build


def _cur_nothing(folder: Path) -> Setup:
    (folder / "cur" / EXPORT).mkdir(parents=True)
    return Setup({"sources": [source("aws", "aws_cur", f"cur/{EXPORT}")]}, "aws", (D1,))


# ------------------------------------------------------------------------------ GCP billing

GCP = source("gcp", "gcp_billing", "gcp/*.jsonl")


def _gcp(rows: list[Any], before: list[Any] | None = None, **extra: Any) -> Any:
    def build(folder: Path) -> Setup:
        gcp_file(folder, rows)
        cfg = {"sources": [GCP], **extra}
        if before is None:
            return Setup(cfg, "gcp", (D1,))
        # a first run lands `before`; the file is then replaced by `rows`
        gcp_file(folder, before)
        from runner import run_ingest

        run_ingest(folder, cfg, "gcp", (D1,))
        gcp_file(folder, rows)
        return Setup(cfg, "gcp", (D1,))

    return build


def _sample_csv(
    rel: str, col: str | None = None, value: str = "", drop: bool = False, n: int | None = None
) -> str:
    """A real sample CSV (BOM removed), optionally its first `n` rows, with `col` of data row
    1 set to `value` (or `col` dropped)."""
    rows = list(csv.reader(io.StringIO((samples_dir() / rel).read_text(encoding="utf-8-sig"))))
    if n is not None:
        rows = rows[: n + 1]
    if col is not None:
        i = rows[0].index(col)
        if drop:
            rows = [r[:i] + r[i + 1 :] for r in rows]
        else:
            rows[1][i] = value
    out = io.StringIO()
    csv.writer(
        out, quoting=csv.QUOTE_ALL if rel.startswith("focus") else csv.QUOTE_MINIMAL
    ).writerows(rows)
    return out.getvalue()


def _file_source(
    name: str, kind: str, folder_name: str, text: Any, day: date, before: Any = None
) -> Any:
    def build(folder: Path) -> Setup:
        cfg = {"sources": [source(name, kind, f"{folder_name}/*.csv")]}
        path = folder / folder_name / "export.csv"
        if before is not None:
            write(path, before() if callable(before) else before)
            from runner import run_ingest

            run_ingest(folder, cfg, name, (day,))
        write(path, text() if callable(text) else text)
        return Setup(cfg, name, (day,))

    return build


GCP_CSV = "gcp-billing/koku-gcp-bq-export-2022-08-01_5.csv"
FOCUS = "focus/focus-sample-data-1.0-focus_sample-1000.csv"
AZURE = "azure/finops-toolkit-EA_ActualCost_Small.csv"
OCI = "oci/focus-converters-oci-reports-cost-csv.csv"
G_DAY, F_DAY, A_DAY, O_DAY = (
    date(2022, 8, 1),
    date(2024, 9, 18),
    date(2023, 9, 4),
    date(2023, 11, 13),
)


def _focus(col: str | None = None, value: str = "", drop: bool = False) -> Any:
    return _file_source(
        "focus", "focus", "focus", lambda: _sample_csv(FOCUS, col, value, drop, n=10), F_DAY
    )


def _gcp_csv(col: str | None = None, value: str = "") -> Any:
    def build(folder: Path) -> Setup:
        write(folder / "gcp" / "export.csv", _sample_csv(GCP_CSV, col, value))
        return Setup({"sources": [source("gcp", "gcp_billing", "gcp/*.csv")]}, "gcp", (G_DAY,))

    return build


def _catalog(**options: Any) -> Any:
    def build(folder: Path) -> Setup:
        src = source("prices", "gcp_catalog", "http://127.0.0.1:9", anonymous=True, **options)
        return Setup({"sources": [src]}, "prices", (D1,))

    return build


CASES = [
    # --- handled on main
    Case(
        "aws_cur",
        "truncated-parquet",
        _cur(_parquet([1.0, 2.0])[:300]),
        Expect(
            "error", (r"fleet-cur-00001\.snappy\.parquet", r"(?i)parquet|corrupt|truncat"), landed=0
        ),
    ),
    Case(
        "aws_cur",
        "manifest-names-missing-file",
        _cur(listed=["fleet-cur-00001.snappy.parquet", "fleet-cur-00002.snappy.parquet"]),
        Expect(
            "error", (r"fleet-cur-Manifest\.json", r"fleet-cur-00002\.snappy\.parquet"), landed=0
        ),
    ),
    Case(
        "aws_cur",
        "renamed-cost-column",
        _cur(_parquet([1.0], "lineitem_unblendedcost")),
        Expect(
            "error", (r"fleet-cur-00001\.snappy\.parquet", r"no line_item_unblended_cost"), landed=0
        ),
    ),
    Case(
        "aws_cur",
        "no-manifest-at-all",
        _cur_nothing,
        Expect("error", (r"fleet-cur", r"(?i)manifest")),
    ),
    Case(
        "aws_cur",
        "credentials-in-config",
        _cur(aws_secret_access_key="abc"),
        Expect(
            "error",
            (
                r"(?i)secrets must be \$\{ENV_VAR\}|credentials are not read",
                r"aws_secret_access_key",
            ),
        ),
    ),
    Case("aws_cur", "unknown-format", _cur(format="cur3"), Expect("error", (r"format.*'cur3'",))),
    Case(
        "gcp_billing",
        "bad-json-line",
        _gcp([gcp_row(), "{oops"]),
        Expect("quarantine", landed=1, quarantined=1, reason=r"not valid JSON"),
    ),
    Case(
        "gcp_billing",
        "no-invoice-month",
        _gcp([gcp_row(), {**gcp_row(), "invoice": {}}]),
        Expect("quarantine", landed=1, quarantined=1, reason=r"invoice\.month is not YYYYMM"),
    ),
    Case(
        "gcp_billing",
        "nan-cost",
        _gcp([gcp_row(), gcp_row(cost=float("nan"))]),
        Expect(
            "quarantine", landed=1, quarantined=1, reason=r"(?i)cost is (NaN|not a finite number)"
        ),
    ),
    Case(
        "gcp_billing",
        "csv-sample-cost-not-a-number",
        _gcp_csv("cost", "abc"),
        Expect("quarantine", landed=8, quarantined=1, reason=r"cost is not a number: 'abc'"),
    ),
    Case("gcp_billing", "csv-sample-lands", _gcp_csv(), Expect("landed", landed=9, quarantined=0)),
    Case(
        "focus",
        "missing-mandatory-column",
        _focus("BilledCost", drop=True),
        Expect(
            "error", (r"focus/export\.csv, line 1", r"lacks mandatory column BilledCost"), landed=0
        ),
    ),
    Case(
        "focus",
        "cost-not-a-number",
        _focus("BilledCost", "abc"),
        Expect("quarantine", landed=9, quarantined=1, reason=r"BilledCost is not a number: abc"),
    ),
    Case(
        "focus", "sample-fully-quoted-lands", _focus(), Expect("landed", landed=10, quarantined=0)
    ),
    Case(
        "azure_cost",
        "lacks-cost-column",
        _file_source(
            "azure", "azure_cost", "azure", lambda: _sample_csv(AZURE, "Cost", drop=True), A_DAY
        ),
        Expect("error", (r"azure/export\.csv, line 1", r"lacks columns.*Cost"), landed=0),
    ),
    Case(
        "azure_cost",
        "cost-not-a-number",
        _file_source(
            "azure", "azure_cost", "azure", lambda: _sample_csv(AZURE, "Cost", "abc"), A_DAY
        ),
        Expect("quarantine", landed=10, quarantined=1, reason=r"(?i)cost.*number|number.*cost"),
    ),
    Case(
        "azure_cost",
        "date-not-a-date",
        _file_source(
            "azure", "azure_cost", "azure", lambda: _sample_csv(AZURE, "Date", "13/45/2023"), A_DAY
        ),
        Expect(
            "quarantine",
            landed=10,
            quarantined=1,
            reason=r"(?i)unparseable (time|date).*13/45/2023",
        ),
    ),
    Case(
        "oci_cost",
        "lacks-cost-column",
        _file_source(
            "oci", "oci_cost", "oci", lambda: _sample_csv(OCI, "cost/myCost", drop=True), O_DAY
        ),
        Expect("error", (r"oci/export\.csv, line 1", r"OCI cost report lacks columns"), landed=0),
    ),
    Case(
        "oci_cost",
        "cost-not-a-number",
        _file_source(
            "oci", "oci_cost", "oci", lambda: _sample_csv(OCI, "cost/myCost", "abc"), O_DAY
        ),
        Expect("quarantine", landed=505, quarantined=1, reason=r"(?i)cost.*number|number.*cost"),
    ),
    Case(
        "gcp_catalog",
        "invalid-description-regex",
        _catalog(description_regex="gpu("),
        Expect("error", (r"description_regex", r"(?i)regex|pattern")),
    ),
    # an unreachable Catalog endpoint is an IngestError naming the source and the endpoint
    Case(
        "gcp_catalog",
        "endpoint-unreachable",
        _catalog(),
        Expect(
            "error",
            (r"prices", r"127\.0\.0\.1:9", r"(?i)fail|refused|connect|unavailable"),
            landed=0,
        ),
    ),
    # --- issue 11 findings, pending their fixes
    Case(
        "gcp_billing",
        "empty-file-replacing-a-period",
        _gcp([], before=[gcp_row(), gcp_row(3.0)]),
        Expect("error", (r"gcp", r"(?i)empty|no rows|header"), landed=2),
    ),
    Case(
        "focus",
        "header-only-file-replacing-a-period",
        _file_source(
            "focus",
            "focus",
            "focus",
            lambda: _sample_csv(FOCUS, n=0),
            F_DAY,
            before=lambda: _sample_csv(FOCUS, n=10),
        ),
        Expect("error", (r"focus", r"(?i)empty|no rows|header"), landed=10),
    ),
    Case(
        "focus",
        "quoted-empty-optional-number",
        _focus("ContractedUnitPrice", ""),
        Expect("landed", landed=10, quarantined=0),
    ),
    Case(
        "focus",
        "negative-usage",
        # FOCUS usage corrections carry a negative quantity (the real Azure sample has 12):
        # a negative ConsumedQuantity is legitimate and lands (docs/landing.md)
        _focus("ConsumedQuantity", "-5"),
        Expect("landed", landed=10, quarantined=0),
    ),
    Case(
        "focus",
        "nan-cost",
        _focus("BilledCost", "NaN"),
        Expect("quarantine", landed=9, quarantined=1, reason=r"(?i)nan|not a number"),
    ),
    Case(
        "focus",
        "rows-outside-requested-periods",
        _file_source(
            "focus", "focus", "focus", lambda: _sample_csv(FOCUS, n=10), date(2024, 10, 5)
        ),
        Expect("finding", landed=0, finding=(r"(?i)outside|not.?landed|empty", "")),
    ),
]
