"""A day's PUE never changes when later days land (docs/metrics.md, "PUE"): a meter's staleness
and which meters make a site's IT total are decided per UTC day, and the energy models are
stored by day (a run rewrites its range and the day before it).

Site dc7, no meter hierarchy in the config, readings by hand:
- `n7`, the node's own IT meter (named after the inventory host): 20 kW every 15 minutes on D1
  and D2;
- `ups-7`, a site-level IT meter installed on D2: 25 kW every 15 minutes on D2 only;
- `fac-7`, the facility meter: 30 kW every 15 minutes on D1, then read hourly on D2.

D1: the site has no site-level IT meter that day, so the node meter is its IT total: 20 kW x
24 h = 480 kWh; facility 30 kW x 24 h = 720 kWh; PUE 1.5. Decided over the whole history (as
before this rule), the site-level meter of D2 would have taken the node meter out of D1 too,
leaving D1 without metered IT energy.
D2: `ups-7` is the IT total, 25 x 24 = 600 kWh (the node meter still gives the node its own
480 kWh for rate cards); each hourly facility reading covers its hour (the day's median interval
is 3,600 s: stale after 7,200 s): 720 kWh; PUE 1.2. A median over both days (900 s, stale after
1,800 s) would have left every D2 reading covering half its hour: 360 kWh, PUE 0.6.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest
from dbt_in_process import dbt_build
from edge_rows import every, frame

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from fleetledger.publish import history_path
from ingest.core.landing import land, write_schema_files

D1, D2 = date(2026, 11, 16), date(2026, 11, 17)
T1 = datetime(2026, 11, 16, tzinfo=UTC)
T2 = T1 + timedelta(days=1)
DAY = timedelta(days=1)


def _readings(day_start: datetime) -> list[dict]:
    rows = [
        {"time": t, "site": "dc7", "meter": "n7", "kind": "it", "kw": 20.0}
        for t in every(day_start, day_start + DAY, 900)
    ]
    if day_start == T2:
        rows += [
            {"time": t, "site": "dc7", "meter": "ups-7", "kind": "it", "kw": 25.0}
            for t in every(day_start, day_start + DAY, 900)
        ]
    step = 900 if day_start == T1 else 3600
    rows += [
        {"time": t, "site": "dc7", "meter": "fac-7", "kind": "facility", "kw": 30.0}
        for t in every(day_start, day_start + DAY, step)
    ]
    for r in rows:
        r.update(x_source="power", x_source_file=f"meters-{day_start.date()}.csv")
    return rows


def _pue(home: Path) -> list[tuple]:
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    try:
        return con.execute(
            "select day, it_kwh, facility_kwh, pue, it_energy_estimated from fct_pue_daily "
            "where site = 'dc7' order by day"
        ).fetchall()
    finally:
        con.close()


def _node_kwh(home: Path) -> dict[date, float]:
    # a day model: in the build's history file (docs/operations.md)
    con = duckdb.connect(str(history_path(home)), read_only=True)
    try:
        con.execute("set TimeZone = 'UTC'")
        return dict(
            con.execute(
                "select cast(to_timestamp(day_epoch) as date), sum(it_kwh) "
                "from intermediate.int_node_metered_energy where host = 'n7' group by 1"
            ).fetchall()
        )
    finally:
        con.close()


def _range(day: date) -> dict[str, str]:
    return {"FLEETLEDGER_RECOMPUTE_START": str(day), "FLEETLEDGER_RECOMPUTE_END": str(day)}


D1_ROW = (D1, pytest.approx(480.0), pytest.approx(720.0), pytest.approx(1.5), False)
D2_ROW = (D2, pytest.approx(600.0), pytest.approx(720.0), pytest.approx(1.2), False)


def test_a_days_pue_is_decided_by_that_days_meters(tmp_path: Path) -> None:
    home = tmp_path
    write_schema_files(home)
    config = Config(inventory=[{"host": "n7", "provider": "onprem", "site": "dc7", "gpus": 1}])
    write_config_tables(config, home)
    # day 1 alone, as its daily run builds it
    record_accounted_days(home, [D1])
    land(home, "power_readings", "power", f"date={D1}", frame("power_readings", _readings(T1)))
    dbt_build(home, "fleetledger", run_id="d1", env=_range(D1))
    assert _pue(home) == [D1_ROW]
    # day 2 lands with a new site-level IT meter and a slower facility meter: the daily run of
    # day 2 rewrites day 1 too (its last reading ends at day 2's first), and day 1 stays
    record_accounted_days(home, [D1, D2])
    land(home, "power_readings", "power", f"date={D2}", frame("power_readings", _readings(T2)))
    dbt_build(home, "fleetledger", run_id="d2", env=_range(D2))
    assert _pue(home) == [D1_ROW, D2_ROW]
    assert _node_kwh(home) == {D1: pytest.approx(480.0), D2: pytest.approx(480.0)}
    # and a full rebuild of both days says the same
    dbt_build(home, "fleetledger", run_id="full", full_refresh=True)
    assert _pue(home) == [D1_ROW, D2_ROW]
    assert _node_kwh(home) == {D1: pytest.approx(480.0), D2: pytest.approx(480.0)}
