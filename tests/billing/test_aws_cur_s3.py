"""AWS CUR from S3 (a moto server over HTTP): the generator's CUR 2.0 export lands through its
manifests, a restated period replaces the old one (and is recorded as a delivery), and the
sensor requests a run when a manifest is new or changed."""

from __future__ import annotations

import io
import json
from datetime import date
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aws_cur_helpers import (
    days_of,
    make_bucket,
    parquet_rows,
    s3_source,
    totals_by_hand,
    upload_folder,
    write_config,
)
from dagster import Definitions, SensorResult, build_sensor_context

from fleetledger.generator import _config
from fleetledger.generator.bill_files import BUCKET, EXPORT, PREFIX, write_cur
from fleetledger.generator.fleet import build_fleet
from ingest.billing.aws_cur import CurExport
from ingest.core.errors import IngestError
from ingest.registry import ingest_source
from orchestration.ingest_assets import build_ingest_assets
from orchestration.resources import FleetResource
from orchestration.schedules import DAILY_JOB_NAME, daily_job
from orchestration.sensors import AWS_CUR_SENSOR, billing_sensors

# three days across a month end: two billing periods
FLEET_START = date(2026, 10, 30)
DAYS = [date(2026, 10, 30), date(2026, 10, 31), date(2026, 11, 1)]
LOCATION = f"s3://{BUCKET}/{PREFIX}/{EXPORT}"
OCT_DATA = f"{PREFIX}/{EXPORT}/data/BILLING_PERIOD=2026-10/{EXPORT}-00001.snappy.parquet"
OCT_MANIFEST = f"{PREFIX}/{EXPORT}/metadata/BILLING_PERIOD=2026-10/{EXPORT}-Manifest.json"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """The generator's CUR 2.0 export folder for the fleet, and the generator's config."""
    root = tmp_path_factory.mktemp("gen-cur")
    fleet = build_fleet(start=FLEET_START, days=3, seed=1)
    write_cur(fleet, root / EXPORT)
    return root / EXPORT, _config(fleet)


def fresh_bucket(s3: Any, export: Path) -> None:
    """(Re)create the generator's bucket with its export, as AWS delivered it."""
    existing = {b["Name"] for b in s3.list_buckets()["Buckets"]}
    if BUCKET in existing:
        for page in s3.get_paginator("list_objects_v2").paginate(Bucket=BUCKET):
            for o in page.get("Contents", []):
                s3.delete_object(Bucket=BUCKET, Key=o["Key"])
    else:
        make_bucket(s3, BUCKET)
    upload_folder(s3, export, BUCKET, f"{PREFIX}/{EXPORT}")


def restate_october(s3: Any, export: Path, execution: str) -> list[dict[str, Any]]:
    """Deliver 2026-10 again (overwrite mode: same keys): the S3 storage lines cost twice as
    much and a credit is added. Returns the restated rows."""
    table = pq.read_table(export / "data/BILLING_PERIOD=2026-10" / f"{EXPORT}-00001.snappy.parquet")
    rows = table.to_pylist()
    for r in rows:
        if r["line_item_product_code"] == "AmazonS3":
            r["line_item_unblended_cost"] *= 2
            r["line_item_net_unblended_cost"] *= 2
            r["pricing_public_on_demand_cost"] *= 2
    credit = dict(rows[0])
    credit.update(
        identity_line_item_id="credit-1",
        line_item_line_item_type="Credit",
        line_item_unblended_cost=-50.0,
        line_item_net_unblended_cost=-50.0,
        pricing_public_on_demand_cost=None,
        line_item_resource_id=None,
        savings_plan_savings_plan_effective_cost=None,
    )
    rows.append(credit)
    buf = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), buf)
    s3.put_object(Bucket=BUCKET, Key=OCT_DATA, Body=buf.getvalue())
    manifest = json.loads(
        (export / "metadata/BILLING_PERIOD=2026-10" / f"{EXPORT}-Manifest.json").read_text()
    )
    manifest["executionId"] = execution
    s3.put_object(Bucket=BUCKET, Key=OCT_MANIFEST, Body=json.dumps(manifest).encode())
    return rows


def landed(home: Path, source: str, period: str) -> pl.DataFrame:
    return pl.read_parquet(home / f"raw/aws_cur_lines/{source}/period={period}/part-0.parquet")


def deliveries(home: Path, source: str) -> pl.DataFrame:
    return pl.read_parquet(home / f"raw/aws_cur_deliveries/{source}/**/*.parquet")


def aws_config(home: Path, endpoint: str, generated_cfg: dict[str, Any]) -> Any:
    return write_config(
        home,
        {
            "sources": [s3_source("aws-cur", LOCATION, endpoint)],
            "inventory": generated_cfg["inventory"],
        },
    )


def test_generator_cur2_lands_from_s3(
    s3: Any, moto_endpoint: str, generated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    export, gen_cfg = generated
    fresh_bucket(s3, export)
    cfg = aws_config(tmp_path, moto_endpoint, gen_cfg)
    report = ingest_source(cfg, cfg.source("aws-cur"), DAYS, tmp_path)
    assert report.partitions == ["period=2026-10", "period=2026-11"]
    assert report.rows_quarantined == 0
    for period in ("2026-10", "2026-11"):
        src = export / f"data/BILLING_PERIOD={period}" / f"{EXPORT}-00001.snappy.parquet"
        hand = totals_by_hand(parquet_rows(src))
        lines = landed(tmp_path, "aws-cur", period)
        assert lines.height == hand["lines"]
        assert lines["line_item_net_unblended_cost"].sum() == pytest.approx(hand["billed"])
        assert lines["x_source_file"][0] == (
            f"s3://{BUCKET}/{PREFIX}/{EXPORT}/data/BILLING_PERIOD={period}/"
            f"{EXPORT}-00001.snappy.parquet"
        )
        rec = deliveries(tmp_path, "aws-cur").filter(pl.col("billing_period") == period)
        assert rec["effective_cost"].sum() == pytest.approx(hand["effective"])
        assert rec["list_cost"].sum() == pytest.approx(hand["list"])
        assert set(rec["format"]) == {"cur2"}
    # the files read are the manifests and the files they list, not a listing of data/
    assert sorted(report.files_read) == sorted(
        f"s3://{BUCKET}/{PREFIX}/{EXPORT}/{kind}"
        for p in ("2026-10", "2026-11")
        for kind in (
            f"metadata/BILLING_PERIOD={p}/{EXPORT}-Manifest.json",
            f"data/BILLING_PERIOD={p}/{EXPORT}-00001.snappy.parquet",
        )
    )
    # tags: the resource_tags map as a JSON object
    tags = json.loads(landed(tmp_path, "aws-cur", "2026-10")["resource_tags"][0])
    assert tags["user_team"] == "gpu-platform"


def test_restated_period_replaces_the_old_one(
    s3: Any, moto_endpoint: str, generated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    export, gen_cfg = generated
    fresh_bucket(s3, export)
    cfg = aws_config(tmp_path, moto_endpoint, gen_cfg)
    src = cfg.source("aws-cur")
    ingest_source(cfg, src, DAYS, tmp_path)
    first = totals_by_hand(
        parquet_rows(export / "data/BILLING_PERIOD=2026-10" / f"{EXPORT}-00001.snappy.parquet")
    )
    assert landed(tmp_path, "aws-cur", "2026-10").height == first["lines"]

    rows = restate_october(s3, export, "exec-oct-restated")
    second = totals_by_hand(rows)
    assert second["lines"] == first["lines"] + 1
    report = ingest_source(cfg, src, DAYS[:1], tmp_path)
    assert report.partitions == ["period=2026-10"]
    lines = landed(tmp_path, "aws-cur", "2026-10")
    # the period is the latest delivery, never the sum of two
    assert lines.height == second["lines"]
    assert set(lines["x_execution_id"]) == {"exec-oct-restated"}
    assert lines["line_item_net_unblended_cost"].sum() == pytest.approx(second["billed"])
    assert second["billed"] == pytest.approx(first["billed"] + 2.53 - 50.0)  # S3 2×1.265, credit
    # November was not requested: untouched
    assert landed(tmp_path, "aws-cur", "2026-11").height > 0

    # both deliveries of October are on record, with what each said
    rec = deliveries(tmp_path, "aws-cur").filter(pl.col("billing_period") == "2026-10")
    by_delivery = {
        d: (n, b)
        for d, n, b in rec.group_by("delivery_id")
        .agg(pl.col("line_count").sum(), pl.col("billed_cost").sum())
        .iter_rows()
    }
    assert len(by_delivery) == 2
    assert by_delivery["exec-oct-restated"][0] == second["lines"]
    assert by_delivery["exec-oct-restated"][1] == pytest.approx(second["billed"])
    (old_id,) = set(by_delivery) - {"exec-oct-restated"}
    assert by_delivery[old_id][1] == pytest.approx(first["billed"])

    # landing the same delivery again adds no record and keeps when it was first landed
    before = rec.select("delivery_id", "service", "ingested_at").sort("delivery_id", "service")
    ingest_source(cfg, src, DAYS[:1], tmp_path)
    again = deliveries(tmp_path, "aws-cur").filter(pl.col("billing_period") == "2026-10")
    assert (
        again.select("delivery_id", "service", "ingested_at")
        .sort("delivery_id", "service")
        .equals(before)
    )
    files = sorted(
        p.name for p in (tmp_path / "raw/aws_cur_deliveries/aws-cur/period=2026-10").iterdir()
    )
    assert len(files) == 2 and all(f.endswith(".parquet") for f in files)


def test_create_new_layout_reads_the_newest_execution(
    s3: Any, moto_endpoint: str, tmp_path: Path
) -> None:
    """'Create new' delivery: one execution folder per delivery under data/ and metadata/."""
    bucket = "create-new"
    make_bucket(s3, bucket)
    base = "exports/cn"
    for execution, cost in (("20261101T000000Z-aaa", 1.0), ("20261102T000000Z-bbb", 2.5)):
        buf = io.BytesIO()
        pq.write_table(pa.table({"line_item_unblended_cost": [cost]}), buf)
        data = f"{base}/data/BILLING_PERIOD=2026-11/{execution}/cn-00001.snappy.parquet"
        s3.put_object(Bucket=bucket, Key=data, Body=buf.getvalue())
        manifest = {
            "executionId": execution,
            "columns": [{"name": "line_item_unblended_cost", "type": "double"}],
            "dataFiles": [f"s3://{bucket}/{data}"],
        }
        s3.put_object(
            Bucket=bucket,
            Key=f"{base}/metadata/BILLING_PERIOD=2026-11/{execution}/cn-Manifest.json",
            Body=json.dumps(manifest).encode(),
        )
    cfg = write_config(
        tmp_path, {"sources": [s3_source("cn", f"s3://{bucket}/{base}", moto_endpoint)]}
    )
    report = ingest_source(cfg, cfg.source("cn"), days_of("2026-11")[:1], tmp_path)
    assert landed(tmp_path, "cn", "2026-11")["line_item_unblended_cost"].to_list() == [2.5]
    assert any("2 manifests, read the newest" in w for w in report.warnings)


def test_location_errors_name_the_location(s3: Any, moto_endpoint: str, tmp_path: Path) -> None:
    make_bucket(s3, "empty-bucket")
    opts = {"endpoint_url": moto_endpoint, "region": "us-east-1"}
    with pytest.raises(IngestError, match=r"s3://empty-bucket/nothing/here: no CUR manifests"):
        CurExport("s3://empty-bucket/nothing/here", opts).latest()
    with pytest.raises(IngestError, match="bucket no-such-bucket does not exist"):
        CurExport("s3://no-such-bucket/x", opts).latest()
    with pytest.raises(IngestError, match="credentials are not read from fleetledger.yml"):
        CurExport("s3://b/x", {**opts, "aws_secret_access_key": "x"})
    with pytest.raises(IngestError, match="format: 'cur3'"):
        CurExport("s3://b/x", {**opts, "format": "cur3"})


def test_sensor_requests_a_run_for_a_new_or_changed_manifest(
    s3: Any, moto_endpoint: str, generated: tuple[Path, dict[str, Any]], tmp_path: Path
) -> None:
    export, gen_cfg = generated
    fresh_bucket(s3, export)
    home = tmp_path / "home"
    cfg = write_config(
        home,
        {
            "sources": [
                s3_source("aws-cur", LOCATION, moto_endpoint),
                s3_source("aws-broken", "s3://no-such-bucket/cur/x", moto_endpoint),
            ]
        },
    )
    assets = build_ingest_assets(cfg)
    (sensor_def,) = billing_sensors(cfg, assets, DAILY_JOB_NAME)
    assert sensor_def.name == AWS_CUR_SENSOR
    # the sensor, its job and the assets it selects resolve together
    defs = Definitions(
        assets=assets,
        jobs=[daily_job()],
        sensors=[sensor_def],
        resources={"fleet": FleetResource(home=str(home))},
    )
    assert defs.resolve_sensor_def(AWS_CUR_SENSOR).job_name == DAILY_JOB_NAME

    def tick(cursor: str | None) -> SensorResult:
        ctx = build_sensor_context(
            cursor=cursor, resources={"fleet": FleetResource(home=str(home))}
        )
        result = sensor_def(ctx)
        assert isinstance(result, SensorResult)
        return result

    # first tick: every manifest is new: one run per delivered period, over its days
    first = tick(None)
    got = sorted(
        (
            r.tags["fleetledger/billing_period"],
            r.tags["dagster/asset_partition_range_start"],
            r.tags["dagster/asset_partition_range_end"],
        )
        for r in first.run_requests or []
    )
    assert got == [
        ("2026-10", "2026-10-01", "2026-10-31"),
        ("2026-11", "2026-11-01", "2026-11-30"),
    ]
    for r in first.run_requests or []:
        assert r.job_name == DAILY_JOB_NAME
        assert [k.to_user_string() for k in r.asset_selection or []] == ["raw/aws-cur"]
        assert r.run_key and r.run_key.startswith("aws_cur:aws-cur:")
    # the broken source is reported, not fatal
    cursor = json.loads(first.cursor or "{}")
    assert set(cursor["sources"]) == {"aws-cur"}
    assert sorted(cursor["sources"]["aws-cur"]) == [
        f"metadata/BILLING_PERIOD={p}/{EXPORT}-Manifest.json" for p in ("2026-10", "2026-11")
    ]

    # nothing changed: no run
    second = tick(first.cursor)
    assert not second.run_requests
    assert second.skip_reason is not None
    assert "no new or changed CUR manifests" in (second.skip_reason.skip_message or "")
    assert "aws-broken" in (second.skip_reason.skip_message or "")

    # October is delivered again: one run for October only, with a new run key
    restate_october(s3, export, "exec-oct-restated")
    third = tick(second.cursor)
    assert [r.tags["fleetledger/billing_period"] for r in third.run_requests or []] == ["2026-10"]
    (run,) = third.run_requests or []
    assert run.run_key not in {r.run_key for r in first.run_requests or []}
    assert not tick(third.cursor).run_requests
