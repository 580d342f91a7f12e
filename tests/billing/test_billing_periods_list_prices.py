"""GCP list prices and the bill lines stored by billing period (docs/operations.md, "Incremental
runs"): a new Cloud Catalog price version reprices the usage after it, whatever period that
usage was billed in, so int_billing_lines_recompute_from goes back to the first period it can
reach; a SKU's first version prices every line of the SKU, so every period recomputes.
Hand-made landed rows (GCP export lines without `cost_at_list`, catalog fetches), every figure
worked out here by hand.

Export lines of SKU `L4`, 10 units each: line 1 of the October invoice month (usage
2026-10-15), line 2 of November (usage 2026-11-01 12:00), and line 4, usage 2026-11-01 06:00
UTC, still October's invoice month (23:00 on 31 October, Pacific time). Line 3: SKU `A100`, 4
units, October. List cost = units x the price version valid when the usage started.
- Run of 2026-11-02: the catalog holds `L4` at $2 (fetched 2026-10-01): the L4 lines $20;
  `A100` has no price yet: its list cost is its cost, $50.
- Run of 2026-11-03: a fetch of 2026-11-01 05:00 prices `L4` at $3: lines 2 and 4 (usage after
  it) are $30, line 1 stays $20. The run's range is November's, but line 4 is October's: the
  choice is October, `list prices changed` (a version reaches the usage from its fetch on,
  billed at the earliest in the invoice month of the day before).
- Run of 2026-11-04: the catalog lists `A100` for the first time ($7): its first version prices
  all its usage, before the fetch too: $28 in October, and every period recomputes (null).
Every run's lines equal a full rebuild's.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from edge_rows import frame

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import land, write_schema_files

OCT_EPOCH = int(datetime(2026, 10, 1, tzinfo=UTC).timestamp())
SELECT = "+int_billing_line_inputs"


def _line(n: int, sku: str, usage: datetime, month: str, units: float, cost: float) -> dict:
    return {
        "x_source": "gcp-export",
        "x_source_file": "export.jsonl",
        "x_line_number": n,
        "billing_account_id": "0A0A0A",
        "service_description": "Compute Engine",
        "sku_id": sku,
        "sku_description": f"Nvidia {sku} GPU running in Frankfurt",
        "usage_start_time": usage,
        "usage_end_time": usage + timedelta(hours=1),
        "project_id": "ml-prod",
        "location_region": "europe-west3",
        "cost": cost,
        "currency": "USD",
        "usage_amount_in_pricing_units": units,
        "usage_pricing_unit": "hour",
        "invoice_month": month,
        "cost_type": "regular",
    }


def _fetch(sku: str, price: float, fetched: datetime) -> dict:
    return {
        "x_source": "gcp-catalog",
        "x_source_file": f"catalog-{fetched.date()}.json",
        "x_line_number": 1,
        "sku_id": sku,
        "description": f"Nvidia {sku} GPU running in Frankfurt",
        "usage_unit": "h",
        "tier_start_usage_amount": 0.0,
        "unit_price": price,
        "currency_code": "USD",
        "effective_time": fetched,
        "fetched_at": fetched,
    }


def _query(home: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _list_costs(home: Path) -> dict[str, float]:
    rows = _query(home, "select x_line_key, list_cost from intermediate.int_billing_lines")
    return {key.rsplit(":", 1)[1]: cost for key, cost in rows}


def _choice(home: Path) -> tuple:
    sql = "select from_hour, reason from intermediate.int_billing_lines_recompute_from"
    return _query(home, sql)[0]


def _lines(home: Path) -> list[tuple]:
    return _query(home, "select * from intermediate.int_billing_lines order by 1")


def _land_fetch(home: Path, sku: str, price: float, fetched: datetime) -> None:
    """A Cloud Catalog fetch of one SKU's price (its own landing partition)."""
    partition = f"date={fetched.date()}"
    rows = frame("gcp_catalog_skus", [_fetch(sku, price, fetched)])
    land(home, "gcp_catalog_skus", "gcp-catalog", partition, rows)


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    home = tmp_path_factory.mktemp("list-prices")
    write_schema_files(home)
    write_config_tables(Config(), home)
    oct_lines = [
        _line(1, "L4", datetime(2026, 10, 15, tzinfo=UTC), "202610", 10.0, 15.0),
        _line(3, "A100", datetime(2026, 10, 20, tzinfo=UTC), "202610", 4.0, 50.0),
        _line(4, "L4", datetime(2026, 11, 1, 6, tzinfo=UTC), "202610", 10.0, 15.0),
    ]
    nov_lines = [_line(2, "L4", datetime(2026, 11, 1, 12, tzinfo=UTC), "202611", 10.0, 15.0)]
    for period, rows in (("2026-10", oct_lines), ("2026-11", nov_lines)):
        lines = frame("gcp_billing_lines", rows)
        land(home, "gcp_billing_lines", "gcp-export", f"period={period}", lines)
    _land_fetch(home, "L4", 2.0, datetime(2026, 10, 1, tzinfo=UTC))
    seen: dict[str, Any] = {}
    days: list[date] = []

    def run(day: date) -> tuple:
        days.append(day)
        record_accounted_days(home, days)
        env = {"FLEETLEDGER_RECOMPUTE_START": str(day), "FLEETLEDGER_RECOMPUTE_END": str(day)}
        dbt_build(home, SELECT, exclude="test_type:singular", env=env)
        return _choice(home), _list_costs(home)

    seen["nov2"] = run(date(2026, 11, 2))
    _land_fetch(home, "L4", 3.0, datetime(2026, 11, 1, 5, tzinfo=UTC))
    seen["nov3"] = run(date(2026, 11, 3))
    _land_fetch(home, "A100", 7.0, datetime(2026, 11, 3, 9, tzinfo=UTC))
    seen["nov4"] = run(date(2026, 11, 4))
    seen["lines"] = _lines(home)
    dbt_build(home, SELECT, exclude="test_type:singular", full_refresh=True)
    seen["full"] = _lines(home)
    return seen


def test_a_new_price_version_recomputes_from_the_first_period_it_reaches(history) -> None:
    choice, costs = history["nov2"]
    assert choice == (None, "no earlier build")
    assert costs == pytest.approx({"1": 20.0, "2": 20.0, "3": 50.0, "4": 20.0})
    choice, costs = history["nov3"]
    assert choice == (OCT_EPOCH, "list prices changed")
    assert costs == pytest.approx({"1": 20.0, "2": 30.0, "3": 50.0, "4": 30.0})


def test_a_skus_first_price_recomputes_every_period(history) -> None:
    choice, costs = history["nov4"]
    assert choice == (None, "list prices changed")
    assert costs == pytest.approx({"1": 20.0, "2": 30.0, "3": 28.0, "4": 30.0})


def test_incremental_lines_equal_a_full_rebuild(history) -> None:
    assert history["lines"] == history["full"]
