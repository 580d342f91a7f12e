"""GCP billing export files: the two flattened-CSV samples (dotted headers, Python-repr credits
and labels), the same rows as nested JSONL and as Parquet, and a CSV that lacks a column. Every
expected number is computed from the sample file with the csv module."""

from __future__ import annotations

import ast
import csv
import json
import os
from collections import defaultdict
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleetledger.config import Config
from ingest.core.errors import IngestError
from ingest.registry import ingest_source

REPO = Path(__file__).resolve().parents[2]
CSV_2020 = "koku-gcp-bq-export-202011-2020-11-08_2020-11-11.csv"
CSV_2022 = "koku-gcp-bq-export-2022-08-01_5.csv"


def gcp_samples() -> Path:
    for c in (
        os.environ.get("FLEETLEDGER_SAMPLES"),
        REPO / "shared" / "samples",
        REPO.parent / "shared" / "samples",
    ):
        if c and (Path(c) / "gcp-billing").is_dir():
            return Path(c) / "gcp-billing"
    pytest.skip("shared/samples/gcp-billing is not available")


def by_hand(path: Path) -> dict[str, dict[str, Any]]:
    """Per invoice month (YYYY-MM): rows, sum(cost), sum(credits.amount), from the file."""
    out: dict[str, dict[str, Any]] = defaultdict(
        lambda: {"rows": 0, "cost": Decimal(0), "credits": Decimal(0)}
    )
    with path.open(newline="") as fh:
        for row in csv.DictReader(fh):
            m = row["invoice.month"]
            period = f"{m[:4]}-{m[4:]}"
            out[period]["rows"] += 1
            out[period]["cost"] += Decimal(row["cost"])
            for credit in ast.literal_eval(row["credits"]):
                out[period]["credits"] += Decimal(str(credit["amount"]))
    return dict(out)


def config(location: Path, **options: Any) -> Config:
    return Config.model_validate(
        {
            "sources": [
                {
                    "name": "gcp-export",
                    "kind": "gcp_billing",
                    "location": str(location),
                    "options": options,
                }
            ]
        }
    )


def landed(home: Path, period: str) -> pl.DataFrame:
    return pl.read_parquet(
        home / f"raw/gcp_billing_lines/gcp-export/period={period}/part-0.parquet"
    )


@pytest.mark.parametrize(
    ("sample", "day", "period"),
    [(CSV_2020, date(2020, 11, 9), "2020-11"), (CSV_2022, date(2022, 8, 1), "2022-08")],
)
def test_flattened_csv_sample_lands_its_totals(
    tmp_path: Path, sample: str, day: date, period: str
) -> None:
    path = gcp_samples() / sample
    expected = by_hand(path)
    assert list(expected) == [period]
    cfg = config(path)
    report = ingest_source(cfg, cfg.source("gcp-export"), [day], tmp_path)
    assert report.partitions == [f"period={period}"]
    assert (report.rows_landed, report.rows_quarantined) == (expected[period]["rows"], 0)
    rows = landed(tmp_path, period)
    assert rows.height == expected[period]["rows"]
    assert rows["cost"].sum() == pytest.approx(float(expected[period]["cost"]), abs=1e-12)
    assert rows["credits_amount"].sum() == pytest.approx(
        float(expected[period]["credits"]), abs=1e-12
    )
    net = (rows["cost"] + rows["credits_amount"]).sum()
    assert net == pytest.approx(float(expected[period]["cost"] + expected[period]["credits"]))
    # the source's own totals were recorded beside the partition
    totals = pl.read_parquet(
        tmp_path / f"raw/billing_source_totals/gcp-export/period={period}/part-0.parquet"
    )
    assert totals.select("currency", "source_rows", "quarantined_rows").rows() == [
        ("USD", expected[period]["rows"], 0)
    ]
    assert totals["source_total"][0] == pytest.approx(
        float(expected[period]["cost"] + expected[period]["credits"]), abs=1e-12
    )


def test_csv_row_mapping(tmp_path: Path) -> None:
    """Python-repr credits and labels, dotted columns, times and the project as sub-account."""
    path = gcp_samples() / CSV_2020
    cfg = config(path)
    ingest_source(cfg, cfg.source("gcp-export"), [date(2020, 11, 9)], tmp_path)
    rows = landed(tmp_path, "2020-11").sort("x_line_number")
    first = rows.row(0, named=True)
    assert first["x_line_number"] == 2  # line 1 is the header
    assert (first["service_id"], first["service_description"]) == (
        "FBF2-FC68-171A",
        "Security Command Center",
    )
    assert (first["sku_id"], first["project_id"], first["project_name"]) == (
        "D5A4-0C3E-4DA4",
        "billing-example-00000",
        "cloud-billing",
    )
    assert first["usage_start_time"] == datetime(2020, 11, 9, 23, tzinfo=UTC)
    assert first["export_time"] == datetime(2020, 11, 10, 5, 49, 32, 199000, tzinfo=UTC)
    assert (first["cost"], first["credits_amount"]) == (5e-06, -5e-06)
    credits = json.loads(first["credits"])
    assert credits == [
        {
            "amount": -5e-06,
            "full_name": None,
            "id": "FreeTrial:Credit-000000-B0BBA4-940A77",
            "name": "FreeTrial:Credit-000000-B0BBA4-940A77",
            "type": "PROMOTION",
        }
    ]
    assert first["invoice_month"] == "202011"
    assert first["usage_amount_in_pricing_units"] == 2.3198314011096954e-05
    # line 5: a goog-resource-type label, no credits
    fifth = rows.filter(pl.col("x_line_number") == 5).row(0, named=True)
    assert json.loads(fifth["labels"]) == {"goog-resource-type": "bigquery_resource"}
    assert (fifth["credits"], fifth["credits_amount"]) == ("[]", 0.0)
    assert rows.filter(pl.col("labels") != "{}").height == 10  # rows with a label, by hand
    # the detailed export's resource columns
    cfg = config(gcp_samples() / CSV_2022)
    ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], tmp_path)
    rows = landed(tmp_path, "2022-08")
    assert set(rows["resource_name"]) == {"instance-1"}
    assert set(rows["resource_global_name"]) == {"//example"}
    assert set(rows["location_region"]) == {"us-central1"}


def _nested(row: dict[str, str]) -> dict[str, Any]:
    """A flattened CSV row back in the export's nested shape (as BigQuery writes JSON)."""
    out: dict[str, Any] = {}
    for key, value in row.items():
        v: Any = value if value != "" else None
        if key in ("credits", "labels", "system_labels", "project.labels"):
            v = ast.literal_eval(value) if value else []
        elif key in ("cost", "usage.amount", "usage.amount_in_pricing_units"):
            v = float(value)
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            node = node.setdefault(p, {})
        node[parts[-1]] = v
    return out


def test_jsonl_and_parquet_shapes_land_the_same_rows(tmp_path: Path) -> None:
    path = gcp_samples() / CSV_2022
    with path.open(newline="") as fh:
        nested = [_nested(r) for r in csv.DictReader(fh)]
    expected = by_hand(path)["2022-08"]
    folder = tmp_path / "export"
    folder.mkdir()
    (folder / "export.jsonl").write_text("\n".join(json.dumps(r) for r in nested) + "\n")
    cfg = config(folder / "export.jsonl")
    ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], tmp_path / "a")
    from_jsonl = landed(tmp_path / "a", "2022-08")
    pq.write_table(pa.Table.from_pylist(nested), folder / "export.parquet")
    cfg = config(folder / "export.parquet")
    ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], tmp_path / "b")
    from_parquet = landed(tmp_path / "b", "2022-08")
    cfg = config(path)
    ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], tmp_path / "c")
    from_csv = landed(tmp_path / "c", "2022-08")
    data = [c for c in from_csv.columns if not c.startswith("x_")]
    assert from_jsonl.select(data).equals(from_csv.select(data))
    assert from_parquet.select(data).equals(from_csv.select(data))
    assert from_jsonl.height == expected["rows"] == 9
    assert from_parquet["cost"].sum() == pytest.approx(float(expected["cost"]))
    assert from_parquet["x_line_number"].to_list() == list(range(1, 10))


def test_csv_without_invoice_month_fails_and_lands_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "export"
    folder.mkdir()
    good = gcp_samples() / CSV_2022
    (folder / "a-good.csv").write_bytes(good.read_bytes())
    cfg = config(folder / "*.csv")
    home = tmp_path / "home"
    ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], home)
    before = landed(home, "2022-08")
    text = good.read_text().replace("invoice.month", "invoice_month", 1)
    (folder / "b-renamed.csv").write_text(text)
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], home)
    message = str(err.value)
    assert "b-renamed.csv, line 1" in message
    assert "lacks columns ['invoice.month']" in message
    assert landed(home, "2022-08").equals(before)  # the landed period is untouched


def test_bad_rows_are_quarantined_with_their_reason(tmp_path: Path) -> None:
    path = gcp_samples() / CSV_2022
    with path.open(newline="") as fh:
        rows = list(csv.reader(fh))
    header = rows[0]
    rows[1][header.index("cost")] = "n/a"
    rows[2][header.index("credits")] = "[{'amount': oops}]"
    f = tmp_path / "export.csv"
    with f.open("w", newline="") as fh:
        csv.writer(fh).writerows(rows)
    cfg = config(f)
    report = ingest_source(cfg, cfg.source("gcp-export"), [date(2022, 8, 1)], tmp_path / "h")
    assert (report.rows_landed, report.rows_quarantined) == (7, 2)
    q = pl.read_parquet(tmp_path / "h/raw/quarantine/gcp-export/period=2022-08/part-0.parquet")
    assert q.select("x_line_number", "reason").rows() == [
        (2, "cost is not a number: 'n/a'"),
        (3, "credits is not a list literal: \"[{'amount': oops}]\""),
    ]
    totals = pl.read_parquet(
        tmp_path / "h/raw/billing_source_totals/gcp-export/period=2022-08/part-0.parquet"
    )
    # 9 source rows, 2 quarantined; neither has an amount the source totals can read
    assert totals.select("source_rows", "quarantined_rows", "unreadable_rows").rows() == [(9, 2, 2)]
