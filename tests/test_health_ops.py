"""The fleet-health, operations and spend marts equal the generator's ground truth
(fleetledger/generator/health_truth.py, computed from the fleet, not from the pipeline).

- fct_fleet_health_daily: every node-day's downtime within 1 s (per hour the node's most-down
  GPU: an XID-79 outage counts its whole length), XID counts by code exactly (XID 79 = 1 on the
  outage node-day, XID 63 = 1 on the row remap's, XID 48 = 1 on the double-bit ECC error's),
  throttle GPU-seconds per reason within 1 s (coverage split at midnight), ECC errors and
  remapped rows exactly (the volatile counters' restart at the reboot and at the GPU reset
  counted right), null where the node does not export the field, stragglers and straggler
  GPU-seconds;
- fct_stragglers: exactly the generator's straggler (run, GPU), on both metrics, with start, end
  and duration within two scrape intervals;
(fct_ops_daily, fct_team_gpu_hours_daily, fct_daily_spend and the Slurm node events:
tests/test_ops_spend.py.)

Reuses the session's `pipeline_home` (no extra pipeline run).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest
import yaml
from mart_rows import epoch as _epoch
from mart_rows import rows as _rows

from fleetledger.publish import history_path

DBT_PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"


@pytest.fixture(scope="module")
def con(pipeline_home: Path) -> duckdb.DuckDBPyConnection:
    c = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    # the day models are in the build's own file, not in the published snapshot
    c.execute(f"attach '{history_path(pipeline_home)}' as history (read_only)")
    return c


# ------------------------------------------------------------------------------ fleet health


THROTTLE_COLUMNS = (
    "throttle_gpu_seconds",
    "thermal_throttle_gpu_seconds",
    "power_throttle_gpu_seconds",
    "throttle_sw_power_cap_gpu_seconds",
    "throttle_hw_slowdown_gpu_seconds",
    "throttle_sw_thermal_gpu_seconds",
    "throttle_hw_thermal_gpu_seconds",
    "throttle_hw_power_brake_gpu_seconds",
)
COUNT_COLUMNS = (
    "ecc_sbe_errors",
    "ecc_dbe_errors",
    "correctable_remapped_rows",
    "uncorrectable_remapped_rows",
    "row_remap_failure",
)
XID_CODES = (13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95, 119, 120)  # var health_xid_codes


def _health(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], dict]:
    rows = _rows(con, "select * from fct_fleet_health_daily")
    return {(str(r["day"]), r["host"]): r for r in rows}


def _truth_row(ground_truth: dict, host: str, day: str) -> dict:
    return next(
        h for h in ground_truth["health_by_day_host"] if h["host"] == host and h["day"] == day
    )


def test_health_per_node_day(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    got = _health(con)
    assert len(got) == len(ground_truth["health_by_day_host"]) == 10 * 3
    for exp in ground_truth["health_by_day_host"]:
        g = got[(exp["day"], exp["host"])]
        key = (exp["day"], exp["host"])
        assert g["accounted_seconds"] == exp["accounted_seconds"] == 86400, key
        assert abs(g["downtime_seconds"] - exp["downtime_seconds"]) <= 1, key
        assert abs(g["gpu_down_seconds"] - exp["gpu_down_seconds"]) <= 1, key
        assert g["uptime_seconds"] + g["downtime_seconds"] == g["accounted_seconds"], key
        assert g["xid_count"] == exp["xid_count"], key
        for code in XID_CODES:
            assert g[f"xid_{code}_count"] == exp["xid_counts"].get(str(code), 0), (key, code)
        assert set(exp["xid_counts"]) <= {str(c) for c in XID_CODES}, key
        assert g["xid_count_is_lower_bound"] is True, key  # the fleet exports the gauge only
        assert g["stragglers"] == exp["stragglers"], key
        interval = ground_truth["scrape_interval_seconds"]
        assert abs(g["straggler_gpu_seconds"] - exp["straggler_gpu_seconds"]) <= 2 * interval, key
        for col in THROTTLE_COLUMNS:
            if exp[col] is None:  # the node's exporter does not report the throttle reasons
                assert g[col] is None, (key, col)
            else:
                assert abs(g[col] - exp[col]) <= 1, (key, col, g[col], exp[col])
        for col in COUNT_COLUMNS:
            assert g[col] == exp[col], (key, col, g[col], exp[col])


def test_health_signals_null_where_not_exported(con: duckdb.DuckDBPyConnection):
    """AWS exports the throttle reasons, on-prem the SBE and DBE counters and the row-remap
    fields, GKE none."""
    exported = {
        r[0]: r[1:]
        for r in con.execute(
            """
            select provider,
                   bool_and(throttle_gpu_seconds is not null),
                   bool_and(ecc_sbe_errors is not null),
                   bool_and(correctable_remapped_rows is not null),
                   bool_and(row_remap_failure is not null),
                   bool_and(ecc_dbe_errors is not null),
                   bool_or(ecc_dbe_errors is not null)
            from fct_fleet_health_daily
            group by provider
            """
        ).fetchall()
    }
    assert exported == {
        "aws": (True, False, False, False, False, False),
        "gcp": (False, False, False, False, False, False),
        "onprem": (False, True, True, True, True, True),
    }
    # the other way round: where a field is exported it is never null
    nulls = con.execute(
        """
        select count(*) from fct_fleet_health_daily
        where (provider = 'aws' and throttle_gpu_seconds is null)
           or (provider = 'onprem' and (ecc_sbe_errors is null or ecc_dbe_errors is null
                                        or row_remap_failure is null))
        """
    ).fetchone()[0]
    assert nulls == 0


def test_xid79_outage_node_day(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    o = ground_truth["scenarios"]["xid79_outage"]
    day = o["start"][:10]
    row = _rows(
        con,
        f"select * from fct_fleet_health_daily where host = '{o['host']}' and day = '{day}'",
    )[0]
    assert row["xid_79_count"] == 1 and row["xid_count"] == 1 and row["fatal_xid_count"] == 1
    exp = _truth_row(ground_truth, o["host"], day)
    # the node is down for the whole outage: its XID GPU is down from the XID sample until
    # the node reports again (per hour, the node's most-down GPU)
    length = _epoch(o["end"]) - _epoch(o["start"])
    assert length == 5 * 3600 + 20 * 60
    assert abs(row["downtime_seconds"] - length) <= 1
    assert abs(exp["downtime_seconds"] - length) <= 1
    assert row["outage_events"] == 1 and row["scheduler_down_seconds"] == length
    events = _rows(con, f"select * from fct_xid_events where host = '{o['host']}'")
    assert [(e["gpu_index"], e["xid"], e["xid_count"]) for e in events] == [(o["gpu_index"], 79, 1)]
    assert events[0]["first_seen_at"] == datetime.fromisoformat(o["start"].replace("Z", "+00:00"))
    # no other XID but the row remap's 63 (not fatal) and the double-bit ECC error's 48 (fatal)
    totals = con.execute(
        "select sum(xid_count), sum(fatal_xid_count), sum(xid_63_count), sum(xid_48_count) "
        "from fct_fleet_health_daily"
    ).fetchone()
    assert totals == (3, 2, 1, 1)


# ------------------------------------------------------------------------------ health events


def test_straggler_thermal_throttle(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    """The straggler GPU is thermally throttled (0x20 | 0x40) for its whole window: its node-day's
    thermal throttle seconds are the coverage of its samples in the window, about 6 h."""
    st = ground_truth["scenarios"]["straggler"]
    sc = ground_truth["health_scenarios"]
    (thermal,) = [t for t in sc["throttles"] if t["reasons"] == 0x20 | 0x40]
    assert (thermal["host"], thermal["gpu_indices"]) == (st["host"], [st["gpu_index"]])
    day = st["start"][:10]
    want = thermal["gpu_seconds_by_day"][day]
    interval = ground_truth["scrape_interval_seconds"]
    assert abs(want - (_epoch(st["end"]) - _epoch(st["start"]))) <= interval
    g = _health(con)[(day, st["host"])]
    for col in (
        "thermal_throttle_gpu_seconds",
        "throttle_sw_thermal_gpu_seconds",
        "throttle_hw_thermal_gpu_seconds",
    ):
        assert abs(g[col] - want) <= 1, col
    # the straggler's own samples: one GPU, thermal bits set through its window only
    per_gpu = con.execute(
        f"""
        select gpu_index, count(*) * {interval}
        from history.intermediate.int_health_gpu_samples
        where host = '{st["host"]}' and (throttle_reasons & 96) = 96
        group by gpu_index
        """
    ).fetchall()
    assert per_gpu == [(st["gpu_index"], want)]


def test_power_cap_and_slowdown_across_midnight(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    """The SW power cap (0x4) on 4 GPUs of the training run, and the HW slowdown with the power
    brake (0x8 | 0x80) on one GPU across the first midnight: its coverage splits between the
    two days (413 s before midnight, 607 s after)."""
    sc = ground_truth["health_scenarios"]["throttles"]
    (cap,) = [t for t in sc if t["reasons"] == 0x4]
    (burst,) = [t for t in sc if t["reasons"] == 0x8 | 0x80]
    got = _health(con)
    day = cap["start"][:10]
    g = got[(day, cap["host"])]
    want = len(cap["gpu_indices"]) * cap["gpu_seconds_by_day"][day]
    assert len(cap["gpu_indices"]) == 4 and abs(want - 4 * 11463) <= 4 * 60
    assert abs(g["throttle_sw_power_cap_gpu_seconds"] - want) <= 1
    assert abs(g["power_throttle_gpu_seconds"] - want) <= 1
    assert g["throttle_hw_slowdown_gpu_seconds"] == 0
    d0, d1 = burst["start"][:10], burst["end"][:10]
    assert (d0, d1) == ("2026-10-02", "2026-10-03")
    assert burst["gpu_seconds_by_day"][d0] == 413 and burst["gpu_seconds_by_day"][d1] == 607
    for d, secs in ((d0, 413), (d1, 607)):
        g = got[(d, burst["host"])]
        assert abs(g["throttle_hw_slowdown_gpu_seconds"] - secs) <= 1, d
        assert abs(g["throttle_hw_power_brake_gpu_seconds"] - secs) <= 1, d
        assert g["throttle_sw_power_cap_gpu_seconds"] == 0, d
    # the idle bit 0x1 is reported (idle GPUs) but is not throttling
    idle, throttled = con.execute(
        "select count(*) filter (where throttle_reasons = 1), "
        "count(*) filter (where (throttle_reasons & 236) <> 0) "
        "from history.intermediate.int_health_gpu_samples"
    ).fetchone()
    assert idle > 0 and throttled > 0


def test_row_remap_xid63(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    """A correctable row remap on one GPU: the remapped-rows counter goes up by 1 at the sample
    that reports XID 63; the gauge keeps 63 until the end but counts once; 63 is not fatal, so
    the GPU's states do not change."""
    (rm,) = ground_truth["health_scenarios"]["row_remaps"]
    (dbe,) = ground_truth["health_scenarios"]["gpu_faults"]
    assert (dbe["day"], dbe["host"]) != (rm["day"], rm["host"])
    got = _health(con)
    for (day, host), g in got.items():
        want = 1 if (day, host) == (rm["day"], rm["host"]) else 0
        assert g["xid_63_count"] == want, (day, host)
        if g["provider"] == "onprem":
            assert g["correctable_remapped_rows"] == want, (day, host)
            # the only uncorrectable remapped row is the double-bit ECC error's
            unc = 1 if (day, host) == (dbe["day"], dbe["host"]) else 0
            assert g["uncorrectable_remapped_rows"] == unc and g["row_remap_failure"] is False
    g = got[(rm["day"], rm["host"])]
    assert g["xid_count"] == 1 and g["fatal_xid_count"] == 0 and g["downtime_seconds"] == 0
    (ev,) = _rows(con, "select * from fct_xid_events where xid = 63")
    assert (ev["host"], ev["gpu_index"], ev["gpu_uuid"]) == (
        rm["host"],
        rm["gpu_index"],
        rm["gpu_uuid"],
    )
    assert ev["first_seen_at"] == datetime.fromisoformat(rm["at"].replace("Z", "+00:00"))
    assert (ev["xid_count"], ev["is_fatal"]) == (1, False)
    xids = _rows(con, "select * from history.intermediate.int_health_xids where xid = 63")
    assert [(x["gpu_uuid"], x["xid_count"], x["counted_from"], x["is_fatal"]) for x in xids] == [
        (rm["gpu_uuid"], 1, "gauge", False)
    ]
    # the remap sample and the gauge after it
    at = _epoch(rm["at"])
    samples = con.execute(
        f"""
        select count(*), min(t), sum(correctable_remapped_rows), bool_or(is_new_xid and t > {at})
        from history.intermediate.int_health_gpu_samples
        where gpu_uuid = '{rm["gpu_uuid"]}' and xid = 63
        """
    ).fetchone()
    assert samples[1:] == (at, 1, False) and samples[0] > 1
    fatal = yaml.safe_load((DBT_PROJECT / "dbt_project.yml").read_text())["vars"]["fatal_xids"]
    assert 63 not in fatal
    # its GPU-hours: no down second after the remap (the states ignore a non-fatal XID)
    down = con.execute(
        f"""
        select sum(down_seconds) from fct_gpu_hours
        where gpu_uuid = '{rm["gpu_uuid"]}' and epoch(hour) >= {at} - {at} % 3600
        """
    ).fetchone()[0]
    assert down == 0


def test_ecc_counter_restart_after_reboot(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    """Volatile SBE counter of a GPU on the node that falls off the bus: 6 before the outage, it
    restarts at the reboot and the first sample back shows 1 (an error since the reload): that
    sample counts 1 (the new value after a drop), and the day counts every error once."""
    (rs,) = ground_truth["health_scenarios"]["ecc_resets"]
    o = ground_truth["scenarios"]["xid79_outage"]
    assert (rs["host"], rs["first_sample_after"]) == (o["host"], o["end"])
    assert (rs["counter_before"], rs["counter_after"]) == (6, 1)
    g = _health(con)[(rs["reboot_day"], rs["host"])]
    assert g["ecc_sbe_errors"] == rs["errors_on_reboot_day"] == 6
    back = _epoch(o["end"])
    rows = con.execute(
        f"""
        select t, ecc_sbe_errors from history.intermediate.int_health_gpu_samples
        where host = '{rs["host"]}' and gpu_index = {rs["gpu_index"]}
          and t between {_epoch(o["start"])} and {back}
        order by t
        """
    ).fetchall()
    assert rows == [(_epoch(o["start"]), 0), (back, 1)]
    # the whole window: the errors the generator placed after the first sample (the counter's
    # starting value of 2 is not an error of the window)
    total = con.execute(
        f"select sum(ecc_sbe_errors) from fct_fleet_health_daily where host = '{rs['host']}'"
    ).fetchone()[0]
    assert (
        total
        == sum(
            h["ecc_sbe_errors"]
            for h in ground_truth["health_by_day_host"]
            if h["host"] == rs["host"]
        )
        == 1 + 6 + 4
    )


def test_double_bit_ecc_error(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    """A double-bit ECC error on GPU 1 of dgx-04 at 00:10:44 on day 2, a GPU no run holds: the
    DBE counter +1, XID 48 in the gauge and an uncorrectable remapped row from that sample; the
    operator resets the GPU at 00:47:21 and the first sample after it (00:47:44) reads XID 0
    with both volatile ECC counters back at 0 (the SBE counter showed the 2 precursor errors).
    XID 48 is fatal: the GPU is down from its XID sample to that first normal sample, 37 min =
    2220 s, all in hour 00:00; the node-day's downtime is that GPU's (its most-down GPU)."""
    (f,) = ground_truth["health_scenarios"]["gpu_faults"]
    assert (f["host"], f["gpu_index"], f["xid"], f["day"]) == ("dgx-04", 1, 48, "2026-10-03")
    assert (f["at"], f["reset_at"], f["first_sample_after_reset"]) == (
        "2026-10-03T00:10:44Z",
        "2026-10-03T00:47:21Z",
        "2026-10-03T00:47:44Z",
    )
    assert f["down_seconds"] == 37 * 60 == 2220
    assert f["down_seconds_by_hour"] == {"2026-10-03T00:00:00Z": 2220}
    assert (f["ecc_dbe_errors"], f["uncorrectable_remapped_rows"]) == (1, 1)
    assert (f["ecc_sbe_counter_before_reset"], f["ecc_dbe_counter_before_reset"]) == (2, 1)
    at, back = _epoch(f["at"]), _epoch(f["first_sample_after_reset"])
    # the node-day in the mart and in the truth
    row = _health(con)[(f["day"], f["host"])]
    exp = _truth_row(ground_truth, f["host"], f["day"])
    assert exp["xid_counts"] == {"48": 1}
    assert (exp["ecc_dbe_errors"], exp["uncorrectable_remapped_rows"]) == (1, 1)
    assert exp["ecc_sbe_errors"] == 2  # the precursors; the reset's drop to 0 adds nothing
    assert exp["downtime_seconds"] == exp["gpu_down_seconds"] == 2220
    assert (row["ecc_dbe_errors"], row["uncorrectable_remapped_rows"], row["xid_48_count"]) == (
        1,
        1,
        1,
    )
    assert (row["xid_count"], row["fatal_xid_count"], row["ecc_sbe_errors"]) == (1, 1, 2)
    assert (row["correctable_remapped_rows"], row["row_remap_failure"]) == (0, False)
    assert abs(row["downtime_seconds"] - 2220) <= 1
    assert abs(row["gpu_down_seconds"] - 2220) <= 1
    assert row["outage_events"] == 0  # no Slurm node event: the node stayed up
    # no other node-day shows a DBE error
    others = con.execute(
        "select count(*) from fct_fleet_health_daily where ecc_dbe_errors <> 0 "
        f"and not (host = '{f['host']}' and day = '{f['day']}')"
    ).fetchone()[0]
    assert others == 0
    # fct_gpu_hours: on its day the GPU is down exactly [at, back), in the hours the truth
    # says (the window's first seconds, before the node's first scrape, are down on day 1)
    hours = {
        h: d
        for h, d in con.execute(
            f"""
            select strftime(hour, '%Y-%m-%dT%H:%M:%SZ'), down_seconds from fct_gpu_hours
            where gpu_uuid = '{f["gpu_uuid"]}' and down_seconds > 0
              and cast(hour as date) = '{f["day"]}'
            """
        ).fetchall()
    }
    assert set(hours) == set(f["down_seconds_by_hour"])
    for h, want in f["down_seconds_by_hour"].items():
        assert abs(hours[h] - want) <= 1, h
    # nobody held it: the rest of the hour is unallocated, no run's seconds (every run's cost
    # and every GPU-day's states: tests/test_ground_truth.py)
    busy, aidle, unalloc = con.execute(
        f"""
        select busy_seconds, allocated_idle_seconds, unallocated_seconds from fct_gpu_hours
        where gpu_uuid = '{f["gpu_uuid"]}' and epoch(hour) = {at - at % 3600}
        """
    ).fetchone()
    assert (busy, aidle) == (0, 0) and abs(unalloc - (3600 - 2220)) <= 1
    # fct_xid_events: the event, first and last seen at the XID sample (the gauge counts once)
    (ev,) = _rows(con, "select * from fct_xid_events where xid = 48")
    assert (ev["host"], ev["gpu_index"], ev["gpu_uuid"]) == (f["host"], 1, f["gpu_uuid"])
    assert (ev["xid_count"], ev["is_fatal"], ev["count_is_lower_bound"]) == (1, True, True)
    assert ev["first_seen_at"] == ev["last_seen_at"] == datetime.fromtimestamp(at, UTC)
    # the samples: XID 48 from the XID sample to the last one before the reset (37 samples),
    # the counters' steps at the XID sample and at the first sample after the reset
    samples = con.execute(
        f"""
        select t, xid, ecc_sbe_errors, ecc_dbe_errors, uncorrectable_remapped_rows
        from history.intermediate.int_health_gpu_samples
        where gpu_uuid = '{f["gpu_uuid"]}' and t between {at} - 300 and {back} + 60
        order by t
        """
    ).fetchall()
    xid48 = [t for t, x, *_ in samples if x == 48]
    assert (len(xid48), xid48[0], xid48[-1]) == (f["samples_with_xid"], at, back - 60)
    assert f["samples_with_xid"] == 37
    steps = [(t, s, d, u) for t, _, s, d, u in samples if s or d or u]
    assert steps == [(at - 240, 2, 0, 0), (at, 0, 1, 1)]  # the drops at `back` count 0
    assert [x for t, x, *_ in samples if t >= back] == [0, 0]


def test_straggler_found(con: duckdb.DuckDBPyConnection, ground_truth: dict):
    interval = ground_truth["scrape_interval_seconds"]
    st = ground_truth["scenarios"]["straggler"]
    rows = _rows(
        con,
        "select *, epoch(started_at) as s, epoch(ended_at) as e from fct_stragglers "
        "order by metric",
    )
    # exactly the generator's straggler, on both signals, and nothing else
    assert {(r["run_id"], r["gpu_uuid"]) for r in rows} == {(st["run_id"], st["gpu_uuid"])}
    assert [r["metric"] for r in rows] == ["sm_clock", "utilization"]
    (exp,) = ground_truth["stragglers"]
    for r in rows:
        assert r["host"] == st["host"] and r["gpu_index"] == st["gpu_index"]
        assert abs(r["s"] - exp["started_epoch"]) <= 2 * interval
        assert abs(r["e"] - exp["ended_epoch"]) <= 2 * interval
        assert abs(r["seconds"] - (_epoch(st["end"]) - _epoch(st["start"]))) <= 2 * interval
        assert r["mean_shortfall"] > 0.2
