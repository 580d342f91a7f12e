"""GCP resource-based committed use discounts amortised onto the usage they cover (issue 12,
item 3; docs/metrics.md, "GCP committed use discounts"): a hand-made billing export (nested
JSONL, as BigQuery writes it) through the reader and the dbt project into fct_gpu_hours and
fct_billing, every expected figure worked out here by hand.

The node `a100-1` (2 GPUs, GCP, us-central1) on 2026-11-17 (the accounted day):
- 00:00: 2 GPU-hours of "Nvidia Tesla A100 GPU" at list $5.86 and 24 vCPU-hours of "A2 Instance
  Core" at $0.75, both fully covered (CUD credits −5.86 and −0.75). The commitment fees, on rows
  with no resource: "Commitment v1: Nvidia Tesla A100 GPU … for 1 Year" $1.84 for 2 GPUs and
  "Commitment v1: A2 Cpu … for 1 Year" $0.48 for 24 vCPUs.
  Node hour = 5.86 − 5.86 + 1.84 + 0.75 − 0.75 + 0.48 = $2.32, $1.16 per GPU (it was $0 before:
  the fees all went to unattributed spend).
- 01:00: the node is stopped: no usage, the same two fees, all unused ($2.32 unattributed).
- 02:00: 2 GPU-hours at $5.86, half covered (CUD −2.93) by a 1-GPU commitment at $0.92; the vCPUs
  on demand ($0.75, no credit). Covered quantity = 2 × 2.93 / 5.86 = 1 = the commitment: the GPU
  row is 5.86 − 2.93 + 0.92 = $3.85, node hour = 3.85 + 0.75 = $4.60, $2.30 per GPU; nothing
  unused.
- 03:00: 1 GPU-hour at $2.93, covered (−2.93), by the 2-GPU commitment at $1.84: the row takes
  1/2 of the fee, $0.92 (node hour $0.92, $0.46 per GPU); the other $0.92 is unused commitment.
- 04:00: 2 GPU-hours at $5.86, covered (CUD −5.86), but no fee row of that hour is in the
  landed bill (the commitment bills elsewhere): the node hour nets to $0, and data health says
  so: `cud_without_commitment_fee:0000-AAAA:ml` (warning), 1 line, credits −5.86 USD, from
  04:00 to 05:00.
Bill: billed = effective total = 2.32 + 2.32 + 4.60 + 1.84 + 0 = $11.08 (amortising moves money
between lines, never adds any); unattributed (no node) effective = 2.32 + 0.92 = $3.24, the
unused commitment; node = 2.32 + 4.60 + 0.92 + 0 = $7.84; 7.84 + 3.24 = 11.08.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import write_schema_files
from ingest.registry import ingest_source

DAY = date(2026, 11, 17)
T0 = datetime(2026, 11, 17, tzinfo=UTC)
NODE = "//compute.googleapis.com/projects/ml/zones/us-central1-a/instances/a100-1"
GPU_SKU = "Nvidia Tesla A100 GPU running in Americas"
CORE_SKU = "A2 Instance Core running in Americas"
GPU_FEE = "Commitment v1: Nvidia Tesla A100 GPU running in Americas for 1 Year"
CPU_FEE = "Commitment v1: A2 Cpu in Americas for 1 Year"


def row(hour: int, sku: str, cost: float, qty: float, cud: float | None, node: bool):
    start = T0 + timedelta(hours=hour)
    credits = (
        [{"name": "Committed use discount", "type": "COMMITTED_USAGE_DISCOUNT", "amount": cud}]
        if cud is not None
        else []
    )
    return {
        "billing_account_id": "0000-AAAA",
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": sku[:12], "description": sku},
        "usage_start_time": start.isoformat(),
        "usage_end_time": (start + timedelta(hours=1)).isoformat(),
        "project": {"id": "ml", "name": "ml"},
        "labels": [],
        "location": {"region": "us-central1", "zone": "us-central1-a" if node else None},
        "resource": {"name": "a100-1", "global_name": NODE} if node else {},
        "cost": cost,
        "currency": "USD",
        "usage": {"amount_in_pricing_units": qty, "pricing_unit": "hour"},
        "credits": credits,
        "invoice": {"month": "202611"},
        "cost_type": "regular",
    }


EXPORT = [
    # 00:00 fully covered
    row(0, GPU_SKU, 5.86, 2, -5.86, True),
    row(0, CORE_SKU, 0.75, 24, -0.75, True),
    row(0, GPU_FEE, 1.84, 2, None, False),
    row(0, CPU_FEE, 0.48, 24, None, False),
    # 01:00 stopped: the fees are unused
    row(1, GPU_FEE, 1.84, 2, None, False),
    row(1, CPU_FEE, 0.48, 24, None, False),
    # 02:00 half the GPUs covered by a 1-GPU commitment, the vCPUs on demand
    row(2, GPU_SKU, 5.86, 2, -2.93, True),
    row(2, CORE_SKU, 0.75, 24, None, True),
    row(2, GPU_FEE, 0.92, 1, None, False),
    # 03:00 one GPU-hour against a 2-GPU commitment
    row(3, GPU_SKU, 2.93, 1, -2.93, True),
    row(3, GPU_FEE, 1.84, 2, None, False),
    # 04:00 covered usage whose commitment fee is not in this export
    row(4, GPU_SKU, 5.86, 2, -5.86, True),
]


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("gcp-cud")
    export = home / "export.jsonl"
    export.write_text("".join(json.dumps(r) + "\n" for r in EXPORT))
    cfg = Config.model_validate(
        {
            "sources": [{"name": "gcp-bill", "kind": "gcp_billing", "location": str(export)}],
            "inventory": [
                {
                    "host": "a100-1",
                    "resource_id": NODE,
                    "provider": "gcp",
                    "site": "us-central1",
                    "gpus": 2,
                }
            ],
        }
    )
    write_schema_files(home)
    report = ingest_source(cfg, cfg.source("gcp-bill"), [DAY], home)
    assert (report.rows_landed, report.rows_quarantined) == (len(EXPORT), 0)
    write_config_tables(cfg, home)
    record_accounted_days(home, [DAY])
    dbt_build(
        home,
        "+fct_gpu_hours +fct_billing +int_data_health_findings",
        exclude="test_type:singular",
    )
    c = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    yield c
    c.close()


def test_cud_credits_land_apart(con: duckdb.DuckDBPyConnection) -> None:
    """The reader keeps the COMMITTED_USAGE_DISCOUNT credits apart:
    −5.86 − 0.75 − 2.93 − 2.93 − 5.86 = −18.33."""
    got = con.execute(
        "select sum(credits_cud_amount) from staging.stg_gcp_billing__lines"
    ).fetchone()[0]
    assert got == pytest.approx(-18.33)


def test_covered_node_costs_what_the_commitment_costs(con: duckdb.DuckDBPyConnection) -> None:
    hours: dict[int, Any] = {
        h.hour: cost
        for h, cost in con.execute(
            "select hour, sum(cost) / count(*) from fct_gpu_hours where host = 'a100-1' "
            "and hour < timestamp '2026-11-17 05:00:00+00' group by hour"
        ).fetchall()
    }
    assert hours == {
        0: pytest.approx(1.16),  # (1.84 + 0.48) / 2 GPUs
        1: pytest.approx(0.0),  # stopped: its fees are unused commitment, not the node's
        2: pytest.approx(2.30),  # (5.86 − 2.93 + 0.92 + 0.75) / 2
        3: pytest.approx(0.46),  # 1.84 × 1/2 / 2
        4: pytest.approx(0.0),  # 5.86 − 5.86, no fee landed: reported by data health (below)
    }
    # list cost is what the usage lists at, commitment or not: (5.86 + 0.75) / 2 at 00:00
    list_00 = con.execute(
        "select list_cost from fct_gpu_hours where host = 'a100-1' "
        "and hour = timestamp '2026-11-17 00:00:00+00' and gpu_index = 0"
    ).fetchone()[0]
    assert list_00 == pytest.approx(3.305)


def test_bill_total_unchanged_and_unused_commitment_unattributed(
    con: duckdb.DuckDBPyConnection,
) -> None:
    billed, effective = con.execute(
        'select sum("BilledCost"), sum("EffectiveCost") from fct_billing'
    ).fetchone()
    assert billed == pytest.approx(11.08)
    assert effective == pytest.approx(11.08)
    node, unattributed = con.execute(
        'select sum(case when x_host is not null then "EffectiveCost" end), '
        'sum(case when x_host is null then "EffectiveCost" end) from fct_billing'
    ).fetchone()
    assert node == pytest.approx(7.84)
    assert unattributed == pytest.approx(3.24)  # 2.32 at 01:00 + 0.92 at 03:00
    # the unused commitment is on the fee rows, ChargeCategory Purchase
    fees = con.execute(
        'select "ChargePeriodStart", sum("EffectiveCost") from fct_billing '
        "where \"ChargeCategory\" = 'Purchase' group by 1 order by 1"
    ).fetchall()
    assert [(t.hour, round(c, 6)) for t, c in fees] == [(0, 0.0), (1, 2.32), (2, 0.0), (3, 0.92)]


def test_cud_without_a_landed_fee_is_a_finding(con: duckdb.DuckDBPyConnection) -> None:
    """Only the 04:00 row's credit has no fee row of its pool (the 00:00-03:00 credits all have
    one): one warning naming the billing account, the project, the hours and −5.86 USD."""
    got = con.execute(
        "select source, cast(day as varchar), check_name, severity, count, message "
        "from intermediate.int_data_health_findings "
        "where check_name like 'cud_without_commitment_fee:%'"
    ).fetchall()
    assert len(got) == 1
    source, day, check, severity, count, message = got[0]
    assert (source, day, check, severity, count) == (
        "gcp-bill",
        "2026-11-17",
        "cud_without_commitment_fee:0000-AAAA:ml",
        "warning",
        1,
    )
    assert "billing account 0000-AAAA, project ml" in message
    assert "from 2026-11-17 04:00:00 to 2026-11-17 05:00:00 (UTC)" in message
    assert "credits of -5.86 USD" in message
