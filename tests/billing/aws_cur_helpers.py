"""Helpers for the AWS CUR tests: put exports on (moto) S3 in their real key layouts, write
configs, and compute bill totals by hand from the files (csv module / pyarrow rows)."""

from __future__ import annotations

import csv
import gzip
import io
import json
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from fleetledger.config import Config, load_config

REGION = "us-east-1"


def make_bucket(s3: Any, bucket: str) -> None:
    s3.create_bucket(Bucket=bucket)


def upload_folder(s3: Any, folder: Path, bucket: str, prefix: str) -> list[str]:
    """Put every file under `folder` at `prefix/<relative path>`; returns the keys."""
    keys = []
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            key = f"{prefix}/{p.relative_to(folder).as_posix()}"
            s3.put_object(Bucket=bucket, Key=key, Body=p.read_bytes())
            keys.append(key)
    return keys


def period_range(period: str) -> str:
    """`2023-11` → `20231101-20231201` (the legacy CUR period folder)."""
    y, m = (int(x) for x in period.split("-"))
    nxt = date(y + (m == 12), m % 12 + 1, 1)
    return f"{y:04d}{m:02d}01-{nxt:%Y%m%d}"


def legacy_manifest_columns(header: list[str]) -> list[dict[str, str]]:
    """Legacy manifest `columns` for a header: `category/Name` cells as category + name."""
    cols = []
    for cell in header:
        if "/" in cell:
            category, _, name = cell.partition("/")
            cols.append({"category": category, "name": name, "type": "String"})
        else:
            cols.append({"name": cell, "type": "String"})
    return cols


def put_legacy_report(
    s3: Any,
    bucket: str,
    prefix: str,
    report: str,
    period: str,
    csv_bytes: bytes,
    assembly: str,
    *,
    columns: bool = True,
) -> str:
    """A legacy CUR delivery: `<prefix>/<report>/<range>/<assembly>/<report>-00001.csv.gz` and
    the period's top-level manifest `<prefix>/<report>/<range>/<report>-Manifest.json` naming it
    (plus the assembly's own copy of the manifest). Returns the manifest key."""
    rng = period_range(period)
    base = f"{prefix}/{report}/{rng}"
    data_key = f"{base}/{assembly}/{report}-00001.csv.gz"
    s3.put_object(Bucket=bucket, Key=data_key, Body=gzip.compress(csv_bytes))
    header = next(csv.reader(io.StringIO(csv_bytes.decode("utf-8"))))
    y, m = period.split("-")
    end = period_range(period).split("-")[1]
    manifest: dict[str, Any] = {
        "assemblyId": assembly,
        "account": "123412340534",
        "charset": "UTF-8",
        "compression": "GZIP",
        "contentType": "text/csv",
        "reportId": "r-" + assembly,
        "reportName": report,
        "billingPeriod": {"start": f"{y}{m}01T000000.000Z", "end": f"{end}T000000.000Z"},
        "bucket": bucket,
        "reportKeys": [data_key],
        "additionalArtifactKeys": [],
    }
    if columns:
        manifest["columns"] = legacy_manifest_columns(header)
    body = json.dumps(manifest).encode()
    s3.put_object(Bucket=bucket, Key=f"{base}/{assembly}/{report}-Manifest.json", Body=body)
    key = f"{base}/{report}-Manifest.json"
    s3.put_object(Bucket=bucket, Key=key, Body=body)
    return key


def write_config(home: Path, doc: dict[str, Any]) -> Config:
    home.mkdir(parents=True, exist_ok=True)
    (home / "fleetledger.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return load_config(home / "fleetledger.yml")


def s3_source(name: str, location: str, endpoint: str, **options: Any) -> dict[str, Any]:
    return {
        "name": name,
        "kind": "aws_cur",
        "location": location,
        "options": {"endpoint_url": endpoint, "region": REGION, **options},
    }


def days_of(period: str) -> list[date]:
    y, m = (int(x) for x in period.split("-"))
    d = date(y, m, 1)
    out = []
    while d.month == m:
        out.append(d)
        d += timedelta(days=1)
    return out


# --------------------------------------------------------------------------- totals by hand


def _f(value: Any) -> float:
    if value is None or value == "":
        return 0.0
    return float(value)


def effective_by_hand(row: dict[str, Any]) -> float:
    """The CUR query library's amortised cost of one line, from its CUR 2.0-named fields."""
    t = row.get("line_item_line_item_type")
    if t == "SavingsPlanCoveredUsage":
        return _f(row.get("savings_plan_savings_plan_effective_cost"))
    if t == "SavingsPlanRecurringFee":
        return _f(row.get("savings_plan_total_commitment_to_date")) - _f(
            row.get("savings_plan_used_commitment")
        )
    if t in ("SavingsPlanNegation", "SavingsPlanUpfrontFee"):
        return 0.0
    if t == "DiscountedUsage":
        return _f(row.get("reservation_effective_cost"))
    if t == "RIFee":
        return _f(row.get("reservation_unused_amortized_upfront_fee_for_billing_period")) + _f(
            row.get("reservation_unused_recurring_fee")
        )
    return _f(row.get("line_item_unblended_cost"))


def billed_by_hand(row: dict[str, Any]) -> float:
    net = row.get("line_item_net_unblended_cost")
    return _f(net) if net not in (None, "") else _f(row.get("line_item_unblended_cost"))


def list_by_hand(row: dict[str, Any]) -> float:
    od = row.get("pricing_public_on_demand_cost")
    return _f(od) if od not in (None, "") else _f(row.get("line_item_unblended_cost"))


LEGACY_TO_CUR2 = {
    "bill/BillingPeriodStartDate": "bill_billing_period_start_date",
    "lineItem/LineItemType": "line_item_line_item_type",
    "lineItem/UnblendedCost": "line_item_unblended_cost",
    "lineItem/NetUnblendedCost": "line_item_net_unblended_cost",
    "lineItem/ProductCode": "line_item_product_code",
    "lineItem/CurrencyCode": "line_item_currency_code",
    "pricing/publicOnDemandCost": "pricing_public_on_demand_cost",
    "savingsPlan/SavingsPlanEffectiveCost": "savings_plan_savings_plan_effective_cost",
    "savingsPlan/TotalCommitmentToDate": "savings_plan_total_commitment_to_date",
    "savingsPlan/UsedCommitment": "savings_plan_used_commitment",
    "reservation/EffectiveCost": "reservation_effective_cost",
    "reservation/UnusedAmortizedUpfrontFeeForBillingPeriod": (
        "reservation_unused_amortized_upfront_fee_for_billing_period"
    ),
    "reservation/UnusedRecurringFee": "reservation_unused_recurring_fee",
}


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The rows of a CUR CSV with the cost fields under their CUR 2.0 names (a hand-written
    table of the legacy names; the snake_case samples already use them)."""
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    return [{LEGACY_TO_CUR2.get(k, k): v for k, v in r.items()} for r in rows]


def totals_by_hand(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Line count and billed / effective / list totals, overall and per service."""
    by_service: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0, 0.0])
    for r in rows:
        s = by_service[r.get("line_item_product_code") or ""]
        s[0] += 1
        s[1] += billed_by_hand(r)
        s[2] += effective_by_hand(r)
        s[3] += list_by_hand(r)
    return {
        "lines": len(rows),
        "billed": sum(billed_by_hand(r) for r in rows),
        "effective": sum(effective_by_hand(r) for r in rows),
        "list": sum(list_by_hand(r) for r in rows),
        "by_service": {k: tuple(v) for k, v in by_service.items()},
    }


def parquet_rows(path: Path) -> list[dict[str, Any]]:
    return pq.read_table(path).to_pylist()


def write_cur2_delivery(
    root: Path, period: str, execution: str, table: pa.Table, name: str | None = None
) -> None:
    """A local CUR 2.0 delivery of `period` under `root` (the export's folder): one data file
    (`name`, default `<execution>-00001.snappy.parquet`) and the manifest naming it; a
    redelivery replaces both."""
    data = root / f"data/BILLING_PERIOD={period}"
    meta = root / f"metadata/BILLING_PERIOD={period}"
    data.mkdir(parents=True, exist_ok=True)
    meta.mkdir(parents=True, exist_ok=True)
    for old in data.glob("*.parquet"):
        old.unlink()
    name = name or f"{execution}-00001.snappy.parquet"
    pq.write_table(table, data / name)
    manifest = {
        "executionId": execution,
        "columns": [
            {"name": c, "type": str(t)}
            for c, t in zip(table.column_names, table.schema.types, strict=True)
        ],
        "dataFiles": [f"s3://bucket/cur/cb/data/BILLING_PERIOD={period}/{name}"],
    }
    (meta / "cb-Manifest.json").write_text(json.dumps(manifest))


def one_p5_config(source: str, location: Path, resource_id: str) -> Config:
    """A local `aws_cur` source and one p5.48xlarge node (8 GPUs, us-east-2) billed as
    `resource_id`."""
    return Config.model_validate(
        {
            "sources": [{"name": source, "kind": "aws_cur", "location": str(location)}],
            "inventory": [
                {
                    "host": "p5-1",
                    "resource_id": resource_id,
                    "provider": "aws",
                    "site": "us-east-2",
                    "gpus": 8,
                }
            ],
        }
    )
