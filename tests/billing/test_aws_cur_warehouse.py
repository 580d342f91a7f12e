"""The AWS bill in the warehouse: CUR 2.0 from S3 (the generator's export, October restated),
the three legacy samples, and a small CUR 2.0 export with EKS split cost allocation rows from a
local folder, built with dbt into fct_billing and fct_billing_restatements. Every expected number
is computed from the files (pyarrow rows, the csv module)."""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import date, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aws_cur_helpers import (
    billed_by_hand,
    csv_rows,
    days_of,
    effective_by_hand,
    list_by_hand,
    make_bucket,
    parquet_rows,
    put_legacy_report,
    s3_source,
    write_config,
)
from dbt_in_process import dbt_build
from test_aws_cur_s3 import DAYS, LOCATION, fresh_bucket, generated, restate_october  # noqa: F401

from fleetledger.config_tables import write_config_tables
from fleetledger.generator.bill_files import EXPORT
from ingest.registry import ingest_source

SAMPLES = {
    "cur-focus": ("focus-converters-sample-anonymous-aws-cur-legacy.csv", "2023-11", "legacy"),
    "cur-koku-legacy": (
        "koku-aws-cur-legacy-costcategory-savingsplan-2023-06-01.csv",
        "2023-06",
        "koku",
    ),
    "cur-koku-snake": (
        "koku-aws-cur-snake_case-athena-columns-2022-07-01.csv",
        "2022-07",
        "athena",
    ),
}
NODE = "i-0eks0node0000001"
POD = "arn:aws:eks:us-east-2:444455556666:pod/gpu-eks/serving/web-1/1111"


def eks_export(root: Path) -> list[dict[str, Any]]:
    """A local CUR 2.0 export with split cost allocation: an instance hour and two pod rows."""
    cols = {
        "identity_line_item_id": ["n1", "p1", "p2"],
        "bill_billing_period_start_date": [datetime(2026, 11, 1)] * 3,
        "line_item_line_item_type": ["Usage"] * 3,
        "line_item_usage_start_date": [datetime(2026, 11, 1)] * 3,
        "line_item_usage_end_date": [datetime(2026, 11, 1, 1)] * 3,
        "line_item_product_code": ["AmazonEC2", "AmazonEKS", "AmazonEKS"],
        "line_item_operation": ["RunInstances", "EKSPod-EC2", "EKSPod-EC2"],
        "line_item_resource_id": [NODE, POD, POD],
        "line_item_unblended_cost": [12.0, 0.0, 0.0],
        "line_item_currency_code": ["USD"] * 3,
        "pricing_public_on_demand_cost": [12.0, 0.0, 0.0],
        "split_line_item_parent_resource_id": [None, NODE, NODE],
        "split_line_item_split_cost": [None, 3.0, 2.0],
        "split_line_item_unused_cost": [None, 1.0, 0.5],
        "resource_tags": pa.array(
            [[], [("aws_eks_namespace", "serving")], [("aws_eks_namespace", "serving")]],
            type=pa.map_(pa.string(), pa.string()),
        ),
    }
    table = pa.table(cols)
    data = root / "data/BILLING_PERIOD=2026-11"
    meta = root / "metadata/BILLING_PERIOD=2026-11"
    data.mkdir(parents=True)
    meta.mkdir(parents=True)
    pq.write_table(table, data / "eks-00001.snappy.parquet")
    (meta / "eks-Manifest.json").write_text(
        json.dumps(
            {
                "executionId": "eks-1",
                "columns": [
                    {"name": n, "type": str(t)}
                    for n, t in zip(table.column_names, table.schema.types, strict=True)
                ],
                "dataFiles": [
                    "s3://elsewhere/cur/eks/data/BILLING_PERIOD=2026-11/eks-00001.snappy.parquet"
                ],
            }
        )
    )
    return table.to_pylist()


def build_billing_marts(home: Path) -> None:
    """`dbt build` of the billing marts and everything they read (dbt's tests of those models
    included) against `home`, in this process."""
    dbt_build(
        home,
        "+fct_billing +fct_billing_restatements",
        exclude="test_type:singular",
    )


@pytest.fixture(scope="module")
def warehouse(
    s3: Any,
    moto_endpoint: str,
    aws_samples: Path,
    generated: tuple[Path, dict[str, Any]],  # noqa: F811 (the fixture)
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """Land everything, build the billing marts; returns the warehouse connection and the rows
    each source's latest delivery holds (CUR 2.0 field names)."""
    export, gen_cfg = generated
    home = tmp_path_factory.mktemp("aws-warehouse")
    fresh_bucket(s3, export)
    bucket = "warehouse-samples"
    make_bucket(s3, bucket)
    sources = [s3_source("aws-cur", LOCATION, moto_endpoint)]
    for name, (file, period, report) in SAMPLES.items():
        body = (aws_samples / file).read_bytes()
        put_legacy_report(s3, bucket, f"cur/{name}", report, period, body, f"asm-{name}")
        sources.append(s3_source(name, f"s3://{bucket}/cur/{name}/{report}", moto_endpoint))
    eks_rows = eks_export(home / "eks-export" / "eks")
    sources.append({"name": "eks-cur", "kind": "aws_cur", "location": "eks-export/eks"})
    inventory = gen_cfg["inventory"] + [
        {
            "host": "eks-node-1",
            "resource_id": NODE,
            "provider": "aws",
            "site": "us-east-2",
            "gpus": 8,
        }
    ]
    cfg = write_config(home, {"sources": sources, "inventory": inventory})

    src = cfg.source("aws-cur")
    ingest_source(cfg, src, DAYS, home)
    oct_file = export / "data/BILLING_PERIOD=2026-10" / f"{EXPORT}-00001.snappy.parquet"
    nov_file = export / "data/BILLING_PERIOD=2026-11" / f"{EXPORT}-00001.snappy.parquet"
    first_oct = parquet_rows(oct_file)
    restated_oct = restate_october(s3, export, "exec-oct-restated")
    ingest_source(cfg, src, DAYS[:1], home)
    rows: dict[str, list[dict[str, Any]]] = {
        "aws-cur": restated_oct + parquet_rows(nov_file),
        "eks-cur": eks_rows,
    }
    for name, (file, period, _) in SAMPLES.items():
        ingest_source(cfg, cfg.source(name), days_of(period)[:1], home)
        rows[name] = csv_rows(aws_samples / file)
    ingest_source(cfg, cfg.source("eks-cur"), [date(2026, 11, 1)], home)
    write_config_tables(cfg, home)
    build_billing_marts(home)
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    yield {
        "con": con,
        "rows": rows,
        "first_oct": first_oct,
        "restated_oct": restated_oct,
        "resource_ids": {n["resource_id"] for n in inventory},
    }
    con.close()


def _period(row: dict[str, Any]) -> str:
    start = row.get("bill_billing_period_start_date")
    if isinstance(start, datetime):
        return start.strftime("%Y-%m")
    return str(start)[:7]


def test_one_row_per_source_line(warehouse: dict[str, Any]) -> None:
    con = warehouse["con"]
    n, keys = con.execute(
        "select count(*), count(distinct x_line_key) from fct_billing where x_provider = 'aws'"
    ).fetchone()
    assert n == keys == sum(len(r) for r in warehouse["rows"].values())
    by_source = dict(
        con.execute("select x_source, count(*) from fct_billing group by 1").fetchall()
    )
    assert by_source == {s: len(r) for s, r in warehouse["rows"].items()}


def test_totals_per_provider_and_period_equal_the_sources(warehouse: dict[str, Any]) -> None:
    hand: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])
    for rows in warehouse["rows"].values():
        for r in rows:
            t = hand[(r.get("line_item_currency_code") or "", _period(r))]
            t[0] += billed_by_hand(r)
            t[1] += effective_by_hand(r)
            t[2] += list_by_hand(r)
    got = (
        warehouse["con"]
        .execute(
            """
        select "BillingCurrency", strftime("BillingPeriodStart", '%Y-%m'),
               sum("BilledCost"), sum("EffectiveCost"), sum("ListCost")
        from fct_billing
        where "ServiceProviderName" = 'AWS'
        group by all
        """
        )
        .fetchall()
    )
    assert {(c, p) for c, p, *_ in got} == set(hand)
    for currency, period, billed, effective, list_cost in got:
        assert (billed, effective, list_cost) == pytest.approx(
            tuple(hand[(currency, period)]), abs=1e-6
        ), (currency, period)
    # October is the restated delivery, never the sum of both deliveries
    oct_billed = sum(billed_by_hand(r) for r in warehouse["restated_oct"])
    (fct_oct,) = (
        warehouse["con"]
        .execute(
            """select sum("BilledCost") from fct_billing
           where x_source = 'aws-cur' and strftime("BillingPeriodStart", '%Y-%m') = '2026-10'"""
        )
        .fetchone()
    )
    assert fct_oct == pytest.approx(oct_billed)


def test_unattributed_lines_are_counted_and_costed(warehouse: dict[str, Any]) -> None:
    ids = warehouse["resource_ids"]
    rows = warehouse["rows"]["aws-cur"]
    orphans = [r for r in rows if r["line_item_resource_id"] not in ids]
    # the generator's Savings Plan fee lines, its S3 bucket and the restatement's credit
    assert {r["line_item_product_code"] for r in orphans} == {
        "ComputeSavingsPlans",
        "AmazonS3",
        "AmazonEC2",
    }
    n, cost = (
        warehouse["con"]
        .execute(
            """select count(*), sum("EffectiveCost") from fct_billing
           where x_source = 'aws-cur' and x_unattributed"""
        )
        .fetchone()
    )
    assert n == len(orphans)
    assert cost == pytest.approx(sum(effective_by_hand(r) for r in orphans))
    # and no line of a legacy sample matches a node
    (attributed,) = (
        warehouse["con"]
        .execute(
            "select count(*) from fct_billing where x_source like 'cur-%' and not x_unattributed"
        )
        .fetchone()
    )
    assert attributed == 0


def test_split_cost_allocation_rows(warehouse: dict[str, Any]) -> None:
    got = (
        warehouse["con"]
        .execute(
            """select "ResourceId", "BilledCost", x_split_parent_resource_id, x_split_cost, x_host,
                  json_extract_string("Tags", '$.aws_eks_namespace')
           from fct_billing where x_source = 'eks-cur' order by x_line_key"""
        )
        .fetchall()
    )
    # the instance carries the bill; each pod row its share (split + unused cost) of the
    # instance, and it is attributed to the node it ran on
    assert got == [
        (NODE, 12.0, None, None, "eks-node-1", None),
        (POD, 0.0, NODE, 4.0, "eks-node-1", "serving"),
        (POD, 0.0, NODE, 2.5, "eks-node-1", "serving"),
    ]


def test_restatement_old_and_new_totals_by_service(warehouse: dict[str, Any]) -> None:
    def by_service(rows: list[dict[str, Any]]) -> dict[str, tuple[int, float, float]]:
        out: dict[str, list[float]] = defaultdict(lambda: [0, 0.0, 0.0])
        for r in rows:
            t = out[r["line_item_product_code"]]
            t[0] += 1
            t[1] += billed_by_hand(r)
            t[2] += effective_by_hand(r)
        return {k: (int(v[0]), v[1], v[2]) for k, v in out.items()}

    old = by_service(warehouse["first_oct"])
    new = by_service(warehouse["restated_oct"])
    got = (
        warehouse["con"]
        .execute(
            """
        select service_name, old_line_count, new_line_count, old_billed_cost, new_billed_cost,
               billed_cost_change, old_effective_cost, new_effective_cost, delivery_id,
               previous_delivery_id, delivered_after_period_end, provider
        from fct_billing_restatements order by service_name
        """
        )
        .fetchall()
    )
    # only aws-cur's October was delivered twice
    assert [g[0] for g in got] == sorted(set(old) | set(new))
    for service, on, nn, ob, nb, change, oe, ne, delivery, previous, after, provider in got:
        assert (on, nn) == (old[service][0], new[service][0])
        assert (ob, nb, oe, ne) == pytest.approx(
            (old[service][1], new[service][1], old[service][2], new[service][2])
        )
        assert change == pytest.approx(nb - ob)
        assert delivery == "exec-oct-restated"
        assert previous != delivery
        assert after is True  # delivered in November, after October closed
        assert provider == "aws"
    changed = {g[0]: g[5] for g in got if abs(g[5]) > 1e-9}
    assert changed == pytest.approx({"AmazonS3": 2.53, "AmazonEC2": -50.0})
