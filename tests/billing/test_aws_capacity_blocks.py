"""EC2 Capacity Blocks for ML (issue 12, item 11; docs/metrics.md, "EC2 Capacity Blocks for
ML"): a hand-made local CUR 2.0 export through the reader and the dbt project into
fct_gpu_hours and fct_billing, every expected figure worked out here by hand.

Capacity Block `cr-0b10c` (1 × p5.48xlarge, 8 GPUs) reserved for 2026-11-17 00:00-04:00, bought
on 2026-11-10 for $96.00: one `Fee` line, usage type `USE2-CapacityBlockFee:p5.48xlarge`,
resource id `cr-0b10c`, zero-length. Instance `i-0p5` ran in the block 00:00-03:00 (three
`Usage` lines of 1 instance-hour at $0, capacity reservation status Used); 03:00-04:00 the block
was unused (one line of 1 hour at $0, resource = the reservation ARN, status Unused).
The fee over the block's 4 reserved instance-hours is $24.00/h: the node costs $24.00 in each
hour it ran, $3.00 per GPU-hour (it was $0: the fee was unattributed); the unused hour's $24.00
stays on the Unused line (the reservation, unattributed). Billed = effective total = $96.00;
node = 3 × 24 = $72.00; unattributed = $24.00.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pytest
from aws_cur_helpers import one_p5_config, write_cur2_delivery
from dbt_in_process import dbt_build

from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import write_schema_files
from ingest.registry import ingest_source

DAY = date(2026, 11, 17)
T0 = datetime(2026, 11, 17)
NODE = "i-0p5"
ARN = "arn:aws:ec2:us-east-2:111122223333:capacity-reservation/cr-0b10c"


def export(root: Path) -> None:
    hours = [T0 + timedelta(hours=h) for h in range(4)]
    bought = datetime(2026, 11, 10, 9)
    n = 5
    cols: dict[str, Any] = {
        "identity_line_item_id": ["fee", "u0", "u1", "u2", "idle3"],
        "bill_billing_period_start_date": [datetime(2026, 11, 1)] * n,
        "line_item_line_item_type": ["Fee", "Usage", "Usage", "Usage", "Usage"],
        "line_item_usage_start_date": [bought, *hours],
        "line_item_usage_end_date": [bought, *(h + timedelta(hours=1) for h in hours)],
        "line_item_product_code": ["AmazonEC2"] * n,
        "line_item_usage_type": [
            "USE2-CapacityBlockFee:p5.48xlarge",
            *["USE2-CapacityBlock:p5.48xlarge"] * 3,
            "USE2-UnusedCapacityBlock:p5.48xlarge",
        ],
        "line_item_resource_id": ["cr-0b10c", NODE, NODE, NODE, ARN],
        "line_item_usage_amount": [1.0, 1.0, 1.0, 1.0, 1.0],
        "line_item_unblended_cost": [96.0, 0.0, 0.0, 0.0, 0.0],
        "line_item_currency_code": ["USD"] * n,
        "product_region_code": ["us-east-2"] * n,
        "capacity_reservation_capacity_reservation_arn": [None, ARN, ARN, ARN, ARN],
        "capacity_reservation_capacity_reservation_status": [
            None,
            "Used",
            "Used",
            "Used",
            "Unused",
        ],
        "capacity_reservation_capacity_reservation_type": [
            None,
            *["EC2 Capacity Blocks for ML"] * 4,
        ],
    }
    write_cur2_delivery(root, "2026-11", "cb-1", pa.table(cols), name="cb-00001.snappy.parquet")


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("capacity-block")
    export(home / "cur" / "cb")
    cfg = one_p5_config("cb-cur", home / "cur/cb", NODE)
    write_schema_files(home)
    report = ingest_source(cfg, cfg.source("cb-cur"), [DAY], home)
    assert (report.rows_landed, report.rows_quarantined) == (5, 0)
    write_config_tables(cfg, home)
    record_accounted_days(home, [DAY])
    dbt_build(home, "+fct_gpu_hours +fct_billing", exclude="test_type:singular")
    c = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    yield c
    c.close()


def test_instances_in_the_block_carry_its_fee(con: duckdb.DuckDBPyConnection) -> None:
    hours = dict(
        con.execute(
            "select hour(hour), sum(cost) / count(*) from fct_gpu_hours where host = 'p5-1' "
            "and hour < timestamp '2026-11-17 05:00:00+00' group by 1"
        ).fetchall()
    )
    # $96 / 4 reserved instance-hours = $24/h over 8 GPUs; 03:00 unused, 04:00 outside the block
    assert hours == {
        0: pytest.approx(3.0),
        1: pytest.approx(3.0),
        2: pytest.approx(3.0),
        3: pytest.approx(0.0),
        4: pytest.approx(0.0),
    }


def test_bill_total_unchanged_and_unused_hours_unattributed(
    con: duckdb.DuckDBPyConnection,
) -> None:
    billed, effective, node, unattributed, fee = con.execute(
        'select sum("BilledCost"), sum("EffectiveCost"), '
        'sum(case when x_host is not null then "EffectiveCost" end), '
        'sum(case when x_host is null then "EffectiveCost" end), '
        "sum(case when x_line_item_type = 'Fee' then \"EffectiveCost\" end) from fct_billing"
    ).fetchone()
    assert (billed, effective) == (pytest.approx(96.0), pytest.approx(96.0))
    assert node == pytest.approx(72.0)  # 3 instance-hours × $24
    assert unattributed == pytest.approx(24.0)  # the Unused hour, on the reservation
    assert fee == pytest.approx(0.0)  # all of it amortised over the block's hours
