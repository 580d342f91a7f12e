"""Bill lines stored by billing period (docs/operations.md, "Incremental runs"): a run
recomputes the bill-line models (int_billing__aws ... int_billing_lines, fct_billing) from the
period int_billing_lines_recompute_from chose on, and a period it does not recompute keeps its
rows. Hand-made CUR 2.0 exports of two months, every figure worked out here by hand.

EC2 Capacity Block `cr-0b10c` (1 x p5.48xlarge) reserved 2026-10-31 22:00 to 2026-11-01 02:00,
bought on 2026-10-30 for $96: the fee line and the block's first two hours (22:00, 23:00) are
October's lines, its last two (00:00, 01:00) November's, each hour a line of 1 instance-hour
at $0 whose share of the fee is $96 x 1 / the block's hours in the bill.
- Run of 2026-10-31: October only: 2 block hours, $48 each.
- Run of 2026-11-01: November lands with the 00:00 hour: 3 hours, $32 each (the range's first
  day is November's, the day before it October's: both periods recompute, reason `range`).
- Run of 2026-11-02: November is redelivered with the 01:00 hour too: 4 hours, $24 each. The
  run's range is November's, but October's two hours' shares changed: the choice is October,
  `shares changed`, and October's lines show $24.
- Run of 2026-11-03: November is redelivered with an S3 line ($5) more: only November
  recomputes (`range`); October's rows, marked before the run, are still the marked ones.
- October is restated (the fee $120, one more October line: $7 of S3) and landed by an ingest of
  its last day alone; the run of 2026-11-04 (range: November) recomputes from October, `bill
  landed again`: each block hour $30.
Each delivery also bills an EKS pod on the node (split cost allocation, its last line): October's
share $3 + $1 unused, November's $2 + $0.50; October restated: $6 + $1 (int_billing__aws_split,
stored by billing period too).
Every run's lines equal a full rebuild's of the same landed data.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
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

NODE = "i-0p5"
#: the inventory host of NODE (aws_cur_helpers.one_p5_config)
HOST = "p5-1"
ARN = "arn:aws:ec2:us-east-2:111122223333:capacity-reservation/cr-0b10c"
BLOCK = datetime(2026, 10, 31, 22)
OCT, NOV = "2026-10", "2026-11"
OCT_EPOCH = int(datetime(2026, 10, 1, tzinfo=UTC).timestamp())
NOV_EPOCH = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp())
# the models stored by billing period, and the selection that builds them and their choice
SELECT = "+int_billing_line_inputs"
# per model stored by billing period: how a row is marked, how a marked row is told, how the
# mark is taken off (a column the model computes, not one it reads: a recomputed row is unmarked)
MARKS = {
    "intermediate.int_billing__aws": (
        "x_source_file = x_source_file || '#marked'",
        "x_source_file like '%#marked'",
        "x_source_file = replace(x_source_file, '#marked', '')",
    ),
    "intermediate.int_billing_lines": (
        "x_energy_kwh = -1",
        "x_energy_kwh = -1",
        "x_energy_kwh = null",
    ),
    "intermediate.int_billing__aws_split": (
        "split_public_on_demand_cost = -1",
        "split_public_on_demand_cost = -1",
        "split_public_on_demand_cost = null",
    ),
    "main.fct_billing": (
        "x_unattributed = not x_unattributed",
        "x_unattributed <> (x_host is null)",
        "x_unattributed = not x_unattributed",
    ),
}


def _hour(i: int) -> dict[str, Any]:
    """Block hour `i` (0-3): 1 instance-hour of the node in the block, $0."""
    start = BLOCK + timedelta(hours=i)
    return {
        "identity_line_item_id": f"u{i}",
        "line_item_line_item_type": "Usage",
        "line_item_usage_start_date": start,
        "line_item_usage_end_date": start + timedelta(hours=1),
        "line_item_product_code": "AmazonEC2",
        "line_item_usage_type": "USE2-CapacityBlock:p5.48xlarge",
        "line_item_resource_id": NODE,
        "line_item_usage_amount": 1.0,
        "line_item_unblended_cost": 0.0,
        "capacity_reservation_capacity_reservation_arn": ARN,
        "capacity_reservation_capacity_reservation_status": "Used",
    }


def _fee(cost: float) -> dict[str, Any]:
    bought = datetime(2026, 10, 30, 9)
    return {
        "identity_line_item_id": "fee",
        "line_item_line_item_type": "Fee",
        "line_item_usage_start_date": bought,
        "line_item_usage_end_date": bought,
        "line_item_product_code": "AmazonEC2",
        "line_item_usage_type": "USE2-CapacityBlockFee:p5.48xlarge",
        "line_item_resource_id": "cr-0b10c",
        "line_item_usage_amount": 1.0,
        "line_item_unblended_cost": cost,
    }


def _s3(key: str, start: datetime, cost: float) -> dict[str, Any]:
    return {
        "identity_line_item_id": key,
        "line_item_line_item_type": "Usage",
        "line_item_usage_start_date": start,
        "line_item_usage_end_date": start + timedelta(hours=1),
        "line_item_product_code": "AmazonS3",
        "line_item_usage_type": "USE2-TimedStorage-ByteHrs",
        "line_item_resource_id": "bucket-1",
        "line_item_usage_amount": 1.0,
        "line_item_unblended_cost": cost,
    }


def _pod(key: str, start: datetime, split: float, unused: float) -> dict[str, Any]:
    """An EKS pod's split cost allocation row on the node: its share split + unused cost."""
    return {
        "identity_line_item_id": key,
        "line_item_line_item_type": "Usage",
        "line_item_usage_start_date": start,
        "line_item_usage_end_date": start + timedelta(hours=1),
        "line_item_product_code": "AmazonEKS",
        "line_item_usage_type": "USE2-EKS-Pod",
        "line_item_resource_id": "pod-1",
        "line_item_usage_amount": 1.0,
        "line_item_unblended_cost": 0.0,
        "split_line_item_parent_resource_id": NODE,
        "split_line_item_split_cost": split,
        "split_line_item_unused_cost": unused,
    }


def _deliver(root: Path, period: str, execution: str, rows: list[dict[str, Any]]) -> None:
    """A CUR 2.0 delivery of `period` (a redelivery replaces the manifest and its data file)."""
    start = datetime.strptime(period + "-01", "%Y-%m-%d")
    columns = sorted({c for r in rows for c in r})
    cols: dict[str, list[Any]] = {c: [r.get(c) for r in rows] for c in columns}
    cols["bill_billing_period_start_date"] = [start] * len(rows)
    cols["line_item_currency_code"] = ["USD"] * len(rows)
    cols["product_region_code"] = ["us-east-2"] * len(rows)
    write_cur2_delivery(root, period, execution, pa.table(cols))


class Fleet:
    """The home, its config and the days recorded so far."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.cur = home / "cur" / "cb"
        self.cfg = one_p5_config("cb-cur", self.cur, NODE)
        self.days: list[date] = []
        write_schema_files(home)
        write_config_tables(self.cfg, home)

    def ingest(self, day: date) -> None:
        ingest_source(self.cfg, self.cfg.source("cb-cur"), [day], self.home)

    def run(self, day: date, *, ingest: bool = True) -> None:
        """The daily run of `day`: ingest its billing period, build its range."""
        if ingest:
            self.ingest(day)
        self.days.append(day)
        record_accounted_days(self.home, self.days)
        env = {"FLEETLEDGER_RECOMPUTE_START": str(day), "FLEETLEDGER_RECOMPUTE_END": str(day)}
        dbt_build(self.home, SELECT, exclude="test_type:singular", env=env)

    def query(self, sql: str) -> list[tuple]:
        con = duckdb.connect(str(self.home / "build/warehouse.duckdb"), read_only=False)
        try:
            return con.execute(sql).fetchall()
        finally:
            con.close()

    def choice(self) -> tuple:
        return self.query(
            "select from_hour, reason from intermediate.int_billing_lines_recompute_from"
        )[0]

    def effective(self) -> dict[str, float]:
        """Each line's effective cost in fct_billing, by `<period>:<line>` (x_line_key is
        `aws:<source>:<period>:<file>:<line>`), the pods' split rows left out (each delivery's
        last line: the other lines keep their numbers)."""
        rows = self.query(
            'select x_line_key, "EffectiveCost" from main.fct_billing '
            "where x_split_parent_resource_id is null order by 1"
        )
        return {f"{key.split(':')[2]}:{key.split(':')[-1]}": cost for key, cost in rows}

    def splits(self) -> dict[str, tuple[str, float]]:
        """Each pod row's node and share of it (split + unused cost), by `<period>:<line>`."""
        rows = self.query(
            "select x_line_key, x_host, x_split_cost from main.fct_billing "
            "where x_split_parent_resource_id is not null order by 1"
        )
        return {f"{k.split(':')[2]}:{k.split(':')[-1]}": (host, cost) for k, host, cost in rows}

    def lines(self) -> list[tuple]:
        return self.query("select * from intermediate.int_billing_lines order by x_line_key")


def _by_period(effective: dict[str, float]) -> dict[str, float]:
    out: dict[str, float] = {}
    for key, cost in effective.items():
        period = key.split(":")[0]
        out[period] = out.get(period, 0.0) + cost
    return out


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    fleet = Fleet(tmp_path_factory.mktemp("billing-periods"))
    seen: dict[str, Any] = {}
    pod_oct, pod_nov = _pod("podo", BLOCK, 3.0, 1.0), _pod("podn", datetime(2026, 11, 1), 2.0, 0.5)
    _deliver(fleet.cur, OCT, "o-1", [_fee(96.0), _hour(0), _hour(1), pod_oct])
    fleet.run(date(2026, 10, 31))
    seen["oct31"] = (fleet.choice(), fleet.effective())
    _deliver(fleet.cur, NOV, "n-1", [_hour(2), pod_nov])
    fleet.run(date(2026, 11, 1))
    seen["nov1"] = (fleet.choice(), fleet.effective())
    _deliver(fleet.cur, NOV, "n-2", [_hour(2), _hour(3), pod_nov])
    fleet.run(date(2026, 11, 2))
    seen["nov2"] = (fleet.choice(), fleet.effective())
    nov_s3 = _s3("s3n", datetime(2026, 11, 2), 5.0)
    _deliver(fleet.cur, NOV, "n-3", [_hour(2), _hour(3), nov_s3, pod_nov])
    # October's rows marked in each model, each in a column the model itself computes: a run
    # that rewrites them puts the real values back
    for model, (mark, _, _) in MARKS.items():
        fleet.query(f"update {model} set {mark} where billing_period_epoch = {OCT_EPOCH}")
    fleet.run(date(2026, 11, 3))
    seen["nov3"] = (fleet.choice(), fleet.effective())
    seen["splits_nov3"] = fleet.splits()
    seen["marked"] = {
        model: fleet.query(
            f"select billing_period_epoch, count(*) from {model} where {marked} group by 1"
        )
        for model, (_, marked, _) in MARKS.items()
    }
    for model, (_, marked, unmark) in MARKS.items():
        fleet.query(f"update {model} set {unmark} where {marked}")
    # October restated after its close, landed by an ingest of its last day alone
    restated_pod = _pod("podo", BLOCK, 6.0, 1.0)
    _deliver(
        fleet.cur,
        OCT,
        "o-2",
        [_fee(120.0), _hour(0), _hour(1), _s3("s3o", BLOCK, 7.0), restated_pod],
    )
    fleet.ingest(date(2026, 10, 31))
    fleet.run(date(2026, 11, 4))
    seen["nov4"] = (fleet.choice(), fleet.effective())
    seen["splits_nov4"] = fleet.splits()
    seen["lines"] = fleet.lines()
    dbt_build(fleet.home, SELECT, exclude="test_type:singular", full_refresh=True)
    seen["full"] = (fleet.choice(), fleet.lines())
    return seen


def test_each_run_chooses_its_first_period(history: dict[str, Any]) -> None:
    assert history["oct31"][0] == (None, "no earlier build")
    assert history["nov1"][0] == (OCT_EPOCH, "range")
    assert history["nov2"][0] == (OCT_EPOCH, "shares changed")
    assert history["nov3"][0] == (NOV_EPOCH, "range")
    assert history["nov4"][0] == (OCT_EPOCH, "bill landed again")
    assert history["full"][0] == (None, "full build")


def test_block_hours_share_the_fee_across_the_two_periods(history: dict[str, Any]) -> None:
    # $96 over 2, then 3, then 4 block hours; then $120 over 4. The fee line gives it all up.
    expected = {
        "oct31": {f"{OCT}:1": 0.0, f"{OCT}:2": 48.0, f"{OCT}:3": 48.0},
        "nov1": {f"{OCT}:1": 0.0, f"{OCT}:2": 32.0, f"{OCT}:3": 32.0, f"{NOV}:1": 32.0},
        "nov2": {
            f"{OCT}:1": 0.0,
            f"{OCT}:2": 24.0,
            f"{OCT}:3": 24.0,
            f"{NOV}:1": 24.0,
            f"{NOV}:2": 24.0,
        },
    }
    for run, lines in expected.items():
        assert history[run][1] == pytest.approx(lines), run
    assert _by_period(history["nov3"][1]) == pytest.approx({OCT: 48.0, NOV: 53.0})
    assert history["nov4"][1] == pytest.approx(
        {
            f"{OCT}:1": 0.0,
            f"{OCT}:2": 30.0,
            f"{OCT}:3": 30.0,
            f"{OCT}:4": 7.0,
            f"{NOV}:1": 30.0,
            f"{NOV}:2": 30.0,
            f"{NOV}:3": 5.0,
        }
    )


def test_a_period_not_recomputed_keeps_its_rows(history: dict[str, Any]) -> None:
    # October's four lines (the pod's split row among them) kept the marks put on them before
    # the run of 2026-11-03; the split model holds the pod's row alone
    split = "intermediate.int_billing__aws_split"
    expected = {model: [(OCT_EPOCH, 1 if model == split else 4)] for model in MARKS}
    assert history["marked"] == expected


def test_pod_shares_follow_their_period(history: dict[str, Any]) -> None:
    # October's pod: $3 split + $1 unused of the node; November's $2 + $0.50. October restated
    # ($6 + $1) and landed again: the run of 2026-11-04 recomputes its split row
    # (on the inventory node whose resource is the pods' parent instance, NODE)
    assert history["splits_nov3"] == {f"{OCT}:4": (HOST, 4.0), f"{NOV}:4": (HOST, 2.5)}
    assert history["splits_nov4"] == {f"{OCT}:5": (HOST, 7.0), f"{NOV}:4": (HOST, 2.5)}


def test_incremental_lines_equal_a_full_rebuild(history: dict[str, Any]) -> None:
    assert history["lines"] == history["full"][1]
