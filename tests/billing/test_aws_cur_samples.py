"""Every real AWS CUR sample in shared/samples/aws-cur/ lands from (moto) S3 in the legacy CUR
layout, and what landed adds up to the sums computed from the file with the csv module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from aws_cur_helpers import (
    csv_rows,
    days_of,
    make_bucket,
    put_legacy_report,
    s3_source,
    totals_by_hand,
    write_config,
)

from ingest.registry import ingest_source

SAMPLES = {
    # file: (source name, billing period, report name)
    "focus-converters-sample-anonymous-aws-cur-legacy.csv": ("cur-focus", "2023-11", "legacy"),
    "koku-aws-cur-legacy-costcategory-savingsplan-2023-06-01.csv": (
        "cur-koku-legacy",
        "2023-06",
        "koku",
    ),
    "koku-aws-cur-snake_case-athena-columns-2022-07-01.csv": (
        "cur-koku-snake",
        "2022-07",
        "athena",
    ),
}
BUCKET = "legacy-samples"


def land_sample(
    s3: Any, endpoint: str, samples: Path, home: Path, file: str
) -> tuple[dict[str, Any], pl.DataFrame, pl.DataFrame, Any]:
    """Put one sample on S3 as a legacy CUR report and ingest its period. Returns the totals by
    hand, the landed lines, the delivery record and the ingest report."""
    name, period, report = SAMPLES[file]
    path = samples / file
    if BUCKET not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        make_bucket(s3, BUCKET)
    put_legacy_report(s3, BUCKET, f"cur/{name}", report, period, path.read_bytes(), "asm-1")
    cfg = write_config(
        home, {"sources": [s3_source(name, f"s3://{BUCKET}/cur/{name}/{report}", endpoint)]}
    )
    r = ingest_source(cfg, cfg.source(name), days_of(period)[:2], home)
    assert r.partitions == [f"period={period}"]
    lines = pl.read_parquet(home / f"raw/aws_cur_lines/{name}/period={period}/part-0.parquet")
    deliveries = pl.read_parquet(home / f"raw/aws_cur_deliveries/{name}/period={period}/*.parquet")
    return totals_by_hand(csv_rows(path)), lines, deliveries, r


@pytest.mark.parametrize("file", sorted(SAMPLES))
def test_sample_lands_with_hand_totals(
    file: str, s3: Any, moto_endpoint: str, aws_samples: Path, tmp_path: Path
) -> None:
    name, period, _ = SAMPLES[file]
    hand, lines, deliveries, report = land_sample(s3, moto_endpoint, aws_samples, tmp_path, file)
    assert report.rows_landed == lines.height == hand["lines"]
    assert report.rows_quarantined == 0
    assert set(lines["x_billing_period"]) == {period}
    assert set(lines["x_execution_id"]) == {"asm-1"}
    assert lines["x_source_file"][0].startswith(f"s3://{BUCKET}/cur/{name}/")
    assert lines["line_item_unblended_cost"].sum() == pytest.approx(hand["billed"], abs=1e-9)
    # the delivery record holds the same totals, per service
    assert deliveries["line_count"].sum() == hand["lines"]
    assert deliveries["billed_cost"].sum() == pytest.approx(hand["billed"], abs=1e-9)
    assert deliveries["effective_cost"].sum() == pytest.approx(hand["effective"], abs=1e-9)
    assert deliveries["list_cost"].sum() == pytest.approx(hand["list"], abs=1e-9)
    got = {
        s: (n, b, e, li)
        for s, n, b, e, li in deliveries.select(
            "service", "line_count", "billed_cost", "effective_cost", "list_cost"
        ).iter_rows()
    }
    assert set(got) == set(hand["by_service"])
    for service, (n, b, e, li) in hand["by_service"].items():
        assert got[service][0] == n
        assert got[service][1:] == pytest.approx((b, e, li), abs=1e-9)
    # times are UTC timestamps whatever the file's spelling
    assert lines.schema["line_item_usage_start_date"] == pl.Datetime("us", "UTC")
    assert lines["line_item_usage_start_date"].min().strftime("%Y-%m") == period


def test_focus_converters_legacy_csv(
    s3: Any, moto_endpoint: str, aws_samples: Path, tmp_path: Path
) -> None:
    file = "focus-converters-sample-anonymous-aws-cur-legacy.csv"
    hand, lines, _, _ = land_sample(s3, moto_endpoint, aws_samples, tmp_path, file)
    # 1281 lines, 1269 Usage + 12 Tax, USD; legacy names mapped to CUR 2.0 ones
    assert hand["lines"] == 1281
    assert lines.group_by("line_item_line_item_type").len().sort(
        "line_item_line_item_type"
    ).rows() == [
        ("Tax", 12),
        ("Usage", 1269),
    ]
    assert set(lines["line_item_currency_code"]) == {"USD"}
    for col in (
        "identity_line_item_id",
        "bill_payer_account_id",
        "pricing_public_on_demand_cost",
        "savings_plan_savings_plan_a_r_n",
        "reservation_unused_amortized_upfront_fee_for_billing_period",
        "product_product_name",
    ):
        assert col in lines.columns
    assert set(lines["resource_tags"]) == {"{}"}  # the report has no resourceTags columns
    assert lines["line_item_unblended_cost"].sum() == pytest.approx(1.6823086974, abs=1e-9)


def test_koku_legacy_cost_categories_and_malformed_header(
    s3: Any, moto_endpoint: str, aws_samples: Path, tmp_path: Path
) -> None:
    file = "koku-aws-cur-legacy-costcategory-savingsplan-2023-06-01.csv"
    hand, lines, _, report = land_sample(s3, moto_endpoint, aws_samples, tmp_path, file)
    # 3 SavingsPlanCoveredUsage lines of 10 NOK each, amortised to 0.1 each
    assert (hand["lines"], hand["billed"], hand["effective"]) == (3, 30.0, pytest.approx(0.3))
    assert set(lines["line_item_currency_code"]) == {"NOK"}
    assert json.loads(lines["cost_category"][0]) == {
        "cost_env": "prod",
        "name": "compute",
        "qe_source": "aws-single",
    }
    # savingsPlan/SavingsPlanArn (not …ARN) still lands as the CUR 2.0 column
    assert "savings_plan_savings_plan_a_r_n" in lines.columns
    # the header cell that lost its comma is kept and reported, naming file and column
    assert "pricing_offering_classpricing_purchase_option" in lines.columns
    warning = [w for w in report.warnings if "malformed" in w]
    assert len(warning) == 1
    assert "header cell 37 'pricing/OfferingClasspricing/PurchaseOption'" in warning[0]
    assert "koku-00001.csv.gz" in warning[0]


def test_koku_snake_case_athena_tags(
    s3: Any, moto_endpoint: str, aws_samples: Path, tmp_path: Path
) -> None:
    file = "koku-aws-cur-snake_case-athena-columns-2022-07-01.csv"
    hand, lines, _, _ = land_sample(s3, moto_endpoint, aws_samples, tmp_path, file)
    assert hand["lines"] == 2
    # resource_tags_* columns fold into the CUR 2.0 resource_tags map (as JSON); empty cells
    # are no tag
    assert [json.loads(t) for t in lines["resource_tags"]] == [
        {"aws_created_by": "IAMUser:fake:and"},
        {"aws_created_by": "IAMUser:fake:and"},
    ]
    assert not [c for c in lines.columns if c.startswith("resource_tags_")]
    # `.000` millisecond timestamps, read as UTC
    assert lines["line_item_usage_start_date"].dt.strftime("%Y-%m-%dT%H:%M").to_list() == [
        "2022-07-01T00:00",
        "2022-07-01T01:00",
    ]
    assert set(lines["bill_billing_entity"]) == {"AWS Marketplace"}
