from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from ingest.billing.aws_cur import local_path, read_cur_export
from ingest.core.errors import IngestError

EXPORT = "fleet-cur"
URI = f"s3://fleet-billing/cur2/{EXPORT}"


TYPES = {
    "line_item_unblended_cost": "double",
    "line_item_usage_start_date": "timestamp",
    "custom_count": "bigint",
    "resource_tags": "map<string,string>",
}


def _manifest(
    folder: Path, period: str, files: list[str], execution: str, columns: list[str]
) -> Path:
    d = folder / "metadata" / f"BILLING_PERIOD={period}"
    d.mkdir(parents=True, exist_ok=True)
    m = d / f"{EXPORT}-Manifest.json"
    m.write_text(
        json.dumps(
            {
                "executionId": execution,
                "exportArn": "arn:aws:bcm-data-exports:us-east-1:111122223333:export/fleet-cur",
                "columns": [{"name": c, "type": TYPES.get(c, "string")} for c in columns],
                "dataFiles": [f"{URI}/data/BILLING_PERIOD={period}/{f}" for f in files],
                "additionalOutputFiles": [],
                "somethingNew": True,
            }
        )
    )
    return m


CSV_COLUMNS = [
    "line_item_line_item_type",
    "line_item_usage_start_date",
    "line_item_unblended_cost",
    "custom_count",
    "resource_tags",
]


def make_export(root: Path) -> Path:
    folder = root / EXPORT
    d = folder / "data" / "BILLING_PERIOD=2026-10"
    d.mkdir(parents=True)
    tags = pa.array(
        [[("user_team", "serving"), ("user_host", 'gpu-"a"01')], [], None],
        type=pa.map_(pa.string(), pa.string()),
    )
    product = pa.array(
        [[("servicecode", "AmazonEC2")], [("servicecode", "AmazonEC2")], []],
        type=pa.map_(pa.string(), pa.string()),
    )
    table = pa.table(
        {
            "line_item_line_item_type": ["Usage", "SavingsPlanCoveredUsage", "Tax"],
            "line_item_usage_start_date": pa.array(
                [datetime(2026, 10, 2), datetime(2026, 10, 2, 1), datetime(2026, 10, 1)],
                type=pa.timestamp("ms"),
            ),
            "line_item_unblended_cost": [98.32, 98.32, 1.5],
            "line_item_resource_id": ["i-0abc", "i-0abc", None],
            "savings_plan_savings_plan_effective_cost": [0.0, 60.1, 0.0],
            "resource_tags": tags,
            "product": product,
            "bill_payer_account_id": ["111122223333"] * 3,
        }
    )
    pq.write_table(table, d / f"{EXPORT}-00001.snappy.parquet")
    _manifest(folder, "2026-10", [f"{EXPORT}-00001.snappy.parquet"], "exec-oct", table.column_names)

    d = folder / "data" / "BILLING_PERIOD=2026-11"
    d.mkdir(parents=True)
    csv = (
        ",".join(CSV_COLUMNS) + "\n"
        'Usage,2026-11-01T00:00:00.000Z,10.5,3,"{""user_team"":""research""}"\n'
        "Usage,2026-11-01T01:00:00.000Z,,,\n"
        "Usage,2026-11-01T02:00:00.000Z,not-a-number,1,\n"
    )
    (d / f"{EXPORT}-00001.csv.gz").write_bytes(gzip.compress(csv.encode()))
    _manifest(folder, "2026-11", [f"{EXPORT}-00001.csv.gz"], "exec-nov", CSV_COLUMNS)
    return folder


def test_local_path_mapping(tmp_path: Path) -> None:
    assert local_path(tmp_path, f"{URI}/data/BILLING_PERIOD=2026-10/x.parquet", EXPORT) == (
        tmp_path / "data/BILLING_PERIOD=2026-10/x.parquet"
    )
    assert local_path(tmp_path, "s3://b/other/data/BILLING_PERIOD=2026-10/x.parquet", "e") == (
        tmp_path / "data/BILLING_PERIOD=2026-10/x.parquet"
    )


def test_cur2_parquet_and_csv(tmp_path: Path) -> None:
    folder = make_export(tmp_path)
    out = read_cur_export(folder, source="aws")
    assert sorted(out) == ["2026-10", "2026-11"]
    oct_ = out["2026-10"]
    rows = oct_.rows
    assert rows.height == 3
    assert oct_.quarantine.height == 0
    assert json.loads(rows["resource_tags"][0]) == {
        "user_team": "serving",
        "user_host": 'gpu-"a"01',
    }
    assert rows["resource_tags"][1] == "{}"
    assert rows["resource_tags"][2] is None
    assert rows["product"][0] == '{"servicecode":"AmazonEC2"}'
    assert rows["line_item_usage_start_date"].to_list() == [
        datetime(2026, 10, 2, tzinfo=UTC),
        datetime(2026, 10, 2, 1, tzinfo=UTC),
        datetime(2026, 10, 1, tzinfo=UTC),
    ]
    assert set(rows["x_execution_id"]) == {"exec-oct"}
    assert set(rows["x_billing_period"]) == {"2026-10"}
    assert rows["x_line_number"].to_list() == [1, 2, 3]
    assert rows["x_source_file"][0].endswith(
        "data/BILLING_PERIOD=2026-10/fleet-cur-00001.snappy.parquet"
    )
    assert oct_.files[0].endswith("fleet-cur-Manifest.json")

    nov = out["2026-11"]
    assert nov.rows.select(
        "line_item_usage_start_date", "line_item_unblended_cost", "custom_count", "resource_tags"
    ).rows() == [
        (datetime(2026, 11, 1, tzinfo=UTC), 10.5, 3, '{"user_team":"research"}'),
        (datetime(2026, 11, 1, 1, tzinfo=UTC), None, None, None),
    ]
    assert nov.quarantine.select("x_line_number", "reason").rows() == [
        (3, "unparseable line_item_unblended_cost")
    ]
    only = read_cur_export(folder, source="aws", periods=["2026-11"])
    assert list(only) == ["2026-11"]


def test_manifest_names_missing_file(tmp_path: Path) -> None:
    folder = make_export(tmp_path)
    _manifest(
        folder,
        "2026-10",
        ["fleet-cur-00001.snappy.parquet", "fleet-cur-00002.snappy.parquet"],
        "e2",
        [],
    )
    with pytest.raises(IngestError) as err:
        read_cur_export(folder, source="aws", periods=["2026-10"])
    msg = str(err.value)
    assert "BILLING_PERIOD=2026-10/fleet-cur-Manifest.json" in msg
    assert "fleet-cur-00002.snappy.parquet" in msg
    with pytest.raises(IngestError, match="does not exist"):
        read_cur_export(tmp_path / "nope", source="aws")
