"""Write the AWS CUR 2.0 export and the GCP billing export for the synthetic fleet.

Also returns the bill totals per provider, computed from the lines written, for ground truth.
"""

from __future__ import annotations

import json
from collections import defaultdict
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pyarrow as pa
import pyarrow.parquet as pq

from fleetledger.generator import model as M
from fleetledger.generator.model import DAY, HOUR, Fleet, stable_hex, stable_uuid

PAYER = "111122223333"
ACCOUNT = "444455556666"
SP_ARN = f"arn:aws:savingsplans::{PAYER}:savingsplan/{stable_uuid('sp')}"
BUCKET = "fleet-billing"
PREFIX = "cur2"
EXPORT = "fleet-cur"
GCP_ACCOUNT = "01A2B3-C4D5E6-F7A8B9"

CUR_SCHEMA = pa.schema(
    [
        ("identity_line_item_id", pa.string()),
        ("identity_time_interval", pa.string()),
        ("bill_billing_period_start_date", pa.timestamp("ms")),
        ("bill_billing_period_end_date", pa.timestamp("ms")),
        ("bill_payer_account_id", pa.string()),
        ("line_item_usage_account_id", pa.string()),
        ("line_item_line_item_type", pa.string()),
        ("line_item_usage_start_date", pa.timestamp("ms")),
        ("line_item_usage_end_date", pa.timestamp("ms")),
        ("line_item_product_code", pa.string()),
        ("line_item_usage_type", pa.string()),
        ("line_item_operation", pa.string()),
        ("line_item_resource_id", pa.string()),
        ("line_item_usage_amount", pa.float64()),
        ("line_item_unblended_rate", pa.string()),
        ("line_item_unblended_cost", pa.float64()),
        ("line_item_net_unblended_cost", pa.float64()),
        ("line_item_currency_code", pa.string()),
        ("line_item_line_item_description", pa.string()),
        ("product_instance_type", pa.string()),
        ("product_region_code", pa.string()),
        ("product", pa.map_(pa.string(), pa.string())),
        ("pricing_public_on_demand_cost", pa.float64()),
        ("pricing_public_on_demand_rate", pa.string()),
        ("pricing_term", pa.string()),
        ("pricing_unit", pa.string()),
        ("savings_plan_savings_plan_a_r_n", pa.string()),
        ("savings_plan_savings_plan_effective_cost", pa.float64()),
        ("savings_plan_savings_plan_rate", pa.float64()),
        ("savings_plan_total_commitment_to_date", pa.float64()),
        ("savings_plan_used_commitment", pa.float64()),
        ("reservation_reservation_a_r_n", pa.string()),
        ("reservation_effective_cost", pa.float64()),
        ("reservation_unused_amortized_upfront_fee_for_billing_period", pa.float64()),
        ("reservation_unused_recurring_fee", pa.float64()),
        ("resource_tags", pa.map_(pa.string(), pa.string())),
        ("cost_category", pa.map_(pa.string(), pa.string())),
        ("discount", pa.map_(pa.string(), pa.float64())),
    ]
)


def _dt(t: int) -> datetime:
    return datetime.fromtimestamp(t, UTC).replace(tzinfo=None)


def _period_bounds(t: int) -> tuple[datetime, datetime]:
    d = datetime.fromtimestamp(t, UTC)
    start = datetime(d.year, d.month, 1)
    end = datetime(d.year + (d.month == 12), d.month % 12 + 1, 1)
    return start, end


def _cur_line(**kw: object) -> dict:
    row = {f.name: None for f in CUR_SCHEMA}
    row.update(kw)
    return row


def cur_rows(fleet: Fleet) -> list[dict]:
    rows: list[dict] = []
    aws = [n for n in fleet.nodes if n.provider == "aws"]
    for h in range(fleet.days * 24):
        a = fleet.t0 + h * HOUR
        ps, pe = _period_bounds(a)
        common = {
            "identity_time_interval": f"{_dt(a).isoformat()}Z/{_dt(a + HOUR).isoformat()}Z",
            "bill_billing_period_start_date": ps,
            "bill_billing_period_end_date": pe,
            "bill_payer_account_id": PAYER,
            "line_item_usage_account_id": ACCOUNT,
            "line_item_usage_start_date": _dt(a),
            "line_item_usage_end_date": _dt(a + HOUR),
            "line_item_currency_code": "USD",
            "product_region_code": "us-east-2",
            "cost_category": {},
            "discount": {},
        }
        used = 0.0
        for n in aws:
            tags = {"user_team": "gpu-platform", "user_cluster": n.cluster, "user_host": n.host}
            base = dict(
                common,
                line_item_product_code="AmazonEC2",
                line_item_usage_type="USE2-BoxUsage:p5.48xlarge",
                line_item_operation="RunInstances",
                line_item_resource_id=n.resource_id,
                line_item_usage_amount=1.0,
                product_instance_type="p5.48xlarge",
                product={
                    "product_name": "Amazon Elastic Compute Cloud",
                    "servicecode": "AmazonEC2",
                },
                pricing_public_on_demand_cost=M.P5_ON_DEMAND_PER_HOUR,
                pricing_public_on_demand_rate=f"{M.P5_ON_DEMAND_PER_HOUR}",
                pricing_unit="Hrs",
                resource_tags=tags,
            )
            if n.savings_plan:
                rows.append(
                    _cur_line(
                        **base,
                        identity_line_item_id=stable_hex("cur", n.host, a, "spcu", n=52),
                        line_item_line_item_type="SavingsPlanCoveredUsage",
                        line_item_unblended_rate=f"{M.P5_ON_DEMAND_PER_HOUR}",
                        line_item_unblended_cost=M.P5_ON_DEMAND_PER_HOUR,
                        line_item_net_unblended_cost=M.P5_ON_DEMAND_PER_HOUR,
                        line_item_line_item_description=(
                            "$55.04 per On Demand Linux p5.48xlarge Instance Hour covered by "
                            "Compute Savings Plan"
                        ),
                        pricing_term="OnDemand",
                        savings_plan_savings_plan_a_r_n=SP_ARN,
                        savings_plan_savings_plan_effective_cost=M.P5_SAVINGS_PLAN_PER_HOUR,
                        savings_plan_savings_plan_rate=M.P5_SAVINGS_PLAN_PER_HOUR,
                    )
                )
                rows.append(
                    _cur_line(
                        **dict(base, pricing_public_on_demand_cost=0.0),
                        identity_line_item_id=stable_hex("cur", n.host, a, "spneg", n=52),
                        line_item_line_item_type="SavingsPlanNegation",
                        line_item_unblended_rate=f"{-M.P5_ON_DEMAND_PER_HOUR}",
                        line_item_unblended_cost=-M.P5_ON_DEMAND_PER_HOUR,
                        line_item_net_unblended_cost=-M.P5_ON_DEMAND_PER_HOUR,
                        line_item_line_item_description=(
                            f"SavingsPlanNegation used by AccountId : {ACCOUNT} and UsageSku"
                        ),
                        savings_plan_savings_plan_a_r_n=SP_ARN,
                        savings_plan_savings_plan_effective_cost=0.0,
                    )
                )
                used += M.P5_SAVINGS_PLAN_PER_HOUR
            else:
                rows.append(
                    _cur_line(
                        **base,
                        identity_line_item_id=stable_hex("cur", n.host, a, "use", n=52),
                        line_item_line_item_type="Usage",
                        line_item_unblended_rate=f"{M.P5_ON_DEMAND_PER_HOUR}",
                        line_item_unblended_cost=M.P5_ON_DEMAND_PER_HOUR,
                        line_item_net_unblended_cost=M.P5_ON_DEMAND_PER_HOUR,
                        line_item_line_item_description=(
                            "$98.32 per On Demand Linux p5.48xlarge Instance Hour"
                        ),
                        pricing_term="OnDemand",
                    )
                )
        # the Savings Plan's hourly fee: the unused part is its effective cost
        rows.append(
            _cur_line(
                **common,
                identity_line_item_id=stable_hex("cur", a, "spfee", n=52),
                line_item_line_item_type="SavingsPlanRecurringFee",
                line_item_product_code="ComputeSavingsPlans",
                line_item_usage_type="ComputeSP:1yrNoUpfront",
                line_item_operation="",
                line_item_resource_id=SP_ARN,
                line_item_usage_amount=1.0,
                line_item_unblended_rate=f"{M.SAVINGS_PLAN_COMMITMENT_PER_HOUR}",
                line_item_unblended_cost=M.SAVINGS_PLAN_COMMITMENT_PER_HOUR,
                line_item_net_unblended_cost=M.SAVINGS_PLAN_COMMITMENT_PER_HOUR,
                line_item_line_item_description="1 year No Upfront Compute Savings Plan",
                product={"product_name": "Savings Plans for AWS Compute usage"},
                pricing_public_on_demand_cost=0.0,
                savings_plan_savings_plan_a_r_n=SP_ARN,
                savings_plan_total_commitment_to_date=M.SAVINGS_PLAN_COMMITMENT_PER_HOUR,
                savings_plan_used_commitment=round(used, 6),
                resource_tags={},
            )
        )
        if h % 24 == 0:
            daily = dict(
                common,
                line_item_usage_end_date=_dt(a + DAY),
                identity_time_interval=f"{_dt(a).isoformat()}Z/{_dt(a + DAY).isoformat()}Z",
            )
            rows.append(
                _cur_line(
                    **daily,
                    identity_line_item_id=stable_hex("cur", a, "s3", n=52),
                    line_item_line_item_type="Usage",
                    line_item_product_code="AmazonS3",
                    line_item_usage_type="USE2-TimedStorage-ByteHrs",
                    line_item_operation="StandardStorage",
                    line_item_resource_id="fleet-checkpoints",
                    line_item_usage_amount=1650.0,
                    line_item_unblended_rate="0.023",
                    line_item_unblended_cost=round(1650 * 0.023 / 30, 6),
                    line_item_net_unblended_cost=round(1650 * 0.023 / 30, 6),
                    line_item_line_item_description="$0.023 per GB - first 50 TB / month",
                    product={"product_name": "Amazon Simple Storage Service"},
                    pricing_public_on_demand_cost=round(1650 * 0.023 / 30, 6),
                    pricing_unit="GB-Mo",
                    resource_tags={"user_team": "llm-training"},
                )
            )
    return rows


def effective_cost(row: dict) -> float:
    t = row["line_item_line_item_type"]
    if t == "SavingsPlanCoveredUsage":
        return row["savings_plan_savings_plan_effective_cost"]
    if t == "SavingsPlanRecurringFee":
        return row["savings_plan_total_commitment_to_date"] - row["savings_plan_used_commitment"]
    if t in ("SavingsPlanNegation", "SavingsPlanUpfrontFee"):
        return 0.0
    return row["line_item_unblended_cost"]


def write_cur(fleet: Fleet, root: Path) -> dict[str, float]:
    """CUR 2.0 export folder (`root` = …/<export>) with data/ and metadata/ per billing period."""
    rows = cur_rows(fleet)
    by_period: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_period[r["bill_billing_period_start_date"].strftime("%Y-%m")].append(r)
    for period, prows in by_period.items():
        data_dir = root / "data" / f"BILLING_PERIOD={period}"
        meta_dir = root / "metadata" / f"BILLING_PERIOD={period}"
        data_dir.mkdir(parents=True, exist_ok=True)
        meta_dir.mkdir(parents=True, exist_ok=True)
        name = f"{EXPORT}-00001.snappy.parquet"
        pq.write_table(pa.Table.from_pylist(prows, schema=CUR_SCHEMA), data_dir / name)
        manifest = {
            "executionId": stable_uuid("exec", fleet.seed, period),
            "exportArn": (
                f"arn:aws:bcm-data-exports:us-east-1:{PAYER}:export/"
                f"{EXPORT}-{stable_uuid('export')}"
            ),
            "exportName": EXPORT,
            "billingPeriod": period,
            "columns": [{"name": f.name, "type": str(f.type)} for f in CUR_SCHEMA],
            "dataFiles": [f"s3://{BUCKET}/{PREFIX}/{EXPORT}/data/BILLING_PERIOD={period}/{name}"],
            "additionalOutputFiles": [],
        }
        (meta_dir / f"{EXPORT}-Manifest.json").write_text(json.dumps(manifest, indent=2))
    return {
        "billed_cost": sum(r["line_item_net_unblended_cost"] for r in rows),
        "effective_cost": sum(effective_cost(r) for r in rows),
        "lines": len(rows),
    }


def write_gcp(fleet: Fleet, out_dir: Path) -> dict[str, float]:
    """Detailed (resource-level) billing export rows as JSONL, one file per usage day."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pacific = ZoneInfo("America/Los_Angeles")
    gcp = [n for n in fleet.nodes if n.provider == "gcp"]
    cost = credits = 0.0
    n_rows = 0
    skus = [
        (
            "0D9B-F2E4-AB12",
            "Nvidia H100 80GB GPU running in Americas",
            M.A3_GPU_PER_HOUR,
            M.A3_CUD_CREDIT_PER_HOUR,
            8 * 3600.0,
            "seconds",
            8.0,
            "hour",
        ),
        (
            "4A1C-77B0-3D21",
            "A3 Instance Core running in Americas",
            M.A3_CORE_PER_HOUR,
            0.0,
            208 * 3600.0,
            "seconds",
            208.0,
            "hour",
        ),
        (
            "9E3F-11C8-5B07",
            "A3 Instance Ram running in Americas",
            M.A3_RAM_PER_HOUR,
            0.0,
            1872 * 2**30 * 3600.0,
            "byte-seconds",
            1872.0,
            "gibibyte hour",
        ),
    ]

    def ts(t: int) -> str:
        return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")

    for d in range(fleet.days):
        a = fleet.t0 + d * DAY
        lines = []
        for h in range(24):
            t = a + h * HOUR
            month = datetime.fromtimestamp(t, UTC).astimezone(pacific).strftime("%Y%m")
            for n in gcp:
                inst = n.resource_id.rsplit("/", 1)[-1]
                for sku_id, desc, c, credit, amt, unit, pamt, punit in skus:
                    row = {
                        "billing_account_id": GCP_ACCOUNT,
                        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
                        "sku": {"id": sku_id, "description": desc},
                        "usage_start_time": ts(t),
                        "usage_end_time": ts(t + HOUR),
                        "project": {
                            "id": "fleet-ml-prod",
                            "number": "918273645500",
                            "name": "fleet-ml-prod",
                            "labels": [],
                            "ancestry_numbers": "/123456789012/",
                        },
                        "labels": [
                            {"key": "goog-k8s-cluster-name", "value": "gke-ml"},
                            {"key": "goog-k8s-node-pool-name", "value": "a3-pool"},
                            {"key": "team", "value": "gpu-platform"},
                        ],
                        "system_labels": [
                            {"key": "compute.googleapis.com/machine_spec", "value": "a3-highgpu-8g"}
                        ],
                        "location": {
                            "location": "us-central1-a",
                            "country": "US",
                            "region": "us-central1",
                            "zone": "us-central1-a",
                        },
                        "resource": {
                            "name": n.host,
                            "global_name": n.resource_id,
                        },
                        "export_time": ts(t + 4 * HOUR + 17 * 60),
                        "cost": c,
                        "currency": "USD",
                        "currency_conversion_rate": 1.0,
                        "usage": {
                            "amount": amt,
                            "unit": unit,
                            "amount_in_pricing_units": pamt,
                            "pricing_unit": punit,
                        },
                        "credits": (
                            [
                                {
                                    "name": "Committed use discount: GPU",
                                    "amount": credit,
                                    "full_name": "Committed use discount: GPU",
                                    "id": f"CUD-{stable_hex('cud', inst, n=10)}",
                                    "type": "COMMITTED_USAGE_DISCOUNT",
                                }
                            ]
                            if credit
                            else []
                        ),
                        "invoice": {"month": month},
                        "cost_type": "regular",
                        "cost_at_list": c,
                        "transaction_type": "GOOGLE",
                    }
                    lines.append(json.dumps(row))
                    cost += c
                    credits += credit
                    n_rows += 1
        # one storage row per day, not on a GPU node
        gcs = {
            "billing_account_id": GCP_ACCOUNT,
            "service": {"id": "95FF-2EF5-5EA1", "description": "Cloud Storage"},
            "sku": {"id": "E5F0-6A5D-7BAD", "description": "Standard Storage US Multi-region"},
            "usage_start_time": ts(a),
            "usage_end_time": ts(a + DAY),
            "project": {"id": "fleet-ml-prod", "number": "918273645500", "name": "fleet-ml-prod"},
            "labels": [{"key": "team", "value": "serving"}],
            "location": {"location": "us", "country": "US", "region": None, "zone": None},
            "resource": {"name": "projects/_/buckets/fleet-model-weights", "global_name": None},
            "export_time": ts(a + DAY + 3 * HOUR),
            "cost": 2.88,
            "currency": "USD",
            "currency_conversion_rate": 1.0,
            "usage": {
                "amount": 1.0,
                "unit": "byte-seconds",
                "amount_in_pricing_units": 3.0,
                "pricing_unit": "gibibyte month",
            },
            "credits": [],
            "invoice": {
                "month": datetime.fromtimestamp(a, UTC).astimezone(pacific).strftime("%Y%m")
            },
            "cost_type": "regular",
            "cost_at_list": 2.88,
            "transaction_type": "GOOGLE",
        }
        lines.append(json.dumps(gcs))
        cost += 2.88
        n_rows += 1
        day = (datetime.fromtimestamp(a, UTC)).strftime("%Y-%m-%d")
        name = f"gcp_billing_export_resource_v1_{GCP_ACCOUNT.replace('-', '_')}_{day}.jsonl"
        (out_dir / name).write_text("\n".join(lines) + "\n")

    return {"billed_cost": cost + credits, "effective_cost": cost + credits, "lines": n_rows}
