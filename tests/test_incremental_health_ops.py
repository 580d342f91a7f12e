"""Later exports that change an earlier day of the fleet-health and operations marts
(docs/operations.md, "Incremental runs"): `fct_fleet_health_daily` and `fct_ops_daily` are
stored by day, and a run must recompute them from the first day whose inputs changed, not only
from its range. A hand-made fleet, every figure worked out here by hand.

Three accounted days, 2026-11-20 (D1), 2026-11-21 (D2) and 2026-11-22 (D3); one on-prem node
`n-1` with 2 GPUs at 0 % every day (DCGM every 300 s), no bill. As first delivered:
- the events export (taken on D1 evening) shows `n-1` DOWN since D1 20:00, still open;
- each day's sacct export shows job 911 (1 GPU) PENDING since D1 10:00.
Built in full: fleet health D1 one outage event and 4 h of scheduler downtime (20:00 to
midnight), D2 and D3 none begun and 24 h each (an open outage covers the whole day); ops: one
outage started on D1, none ended; 911 pending at the end of every day (1 GPU).

Then three runs of D3 (the range: D3 alone; the health signals rewrite D2 too, the day before
the range):
1. an events export that closed the outage at D1 22:00: D1's outage changed, so both marts
   recompute from D1 (`health events changed`, `runs or outages changed`): health D1 1 event
   and 2 h, D2 and D3 none; ops D1 one outage ended, MTTR 7,200 s. Left at the range (and the
   day before it), D1 would keep 4 h and no outage ended.
2. D3's sacct export delivered again: 911 started at D2 23:00 (the D2 export was taken before)
   and COMPLETED at D3 03:00. Its start changed, so the ops recompute from D2, the earlier of
   its two starts (none, D2 23:00) — not from D1, its submission: it was pending at the end of
   D1 in both versions. Ops: D1 still pending 1; D2 started 1 with a queue wait of 37 h
   (133,200 s: D1 10:00 to D2 23:00), nothing pending; D3 one run ended, completed. The health
   recomputes from D2 (`range`). Left at the range, D2 would still count 911 pending.
3. nothing new: both recompute their range (health from D2, ops from D3), with the same rows.
Each time both marts equal a full build of the same landed data.

XIDs, stored by day (`fct_xid_events`): GPU 0 exports DCGM_EXP_XID_ERRORS_COUNT for XID 31 on
D1 (2 at 12:00: its first sample, taken whole) and D3 (3 at 06:00), not on D2 (the series
gone while no XID was in the window); so D3's one new XID is its count minus D1's last, two
days back (a run of D3 alone reads it from int_health_xid_count_last_samples), not 3. GPU 1
shows XID 43 on the last-XID gauge on D1 (05:00) and XID 13 on D3 (08:00), and exports the count
on D3 only (XID 43 at 1 at 09:00): whether the gauge counts is decided per GPU and day, so D1's
43 counts from the gauge (a lower bound) and D3's 13 does not (its count says one 43).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build_models_of_day, dbt_invoke, full_build_rows
from edge_rows import built_rows, dcgm, every, frame, one_node_home, slurm_job

from ingest.core.landing import land

D1, D2, D3 = date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22)
T1 = datetime(2026, 11, 20, tzinfo=UTC)
HOUR = timedelta(hours=1)
DAY = timedelta(days=1)
UTIL = "DCGM_FI_DEV_GPU_UTIL"
D1_EPOCH = int(T1.timestamp())
D2_EPOCH, D3_EPOCH = D1_EPOCH + 86400, D1_EPOCH + 2 * 86400

HEALTH = (
    "select day, host, accounted_seconds, downtime_seconds, outage_events, "
    "scheduler_down_seconds from main.fct_fleet_health_daily order by day, host"
)
OPS = (
    "select day, runs_ended, runs_completed, runs_started, queue_wait_p50_seconds, "
    "runs_pending_at_day_end, pending_gpus_at_day_end, outages_started, outages_ended, "
    "mttr_seconds from main.fct_ops_daily order by day"
)
XIDS = (
    "select day, gpu_index, xid, xid_count, count_is_lower_bound from main.fct_xid_events "
    "order by day, gpu_index, xid"
)
HEALTH_CHOICE = "select from_hour, reason from intermediate.int_fleet_health_recompute_from"
OPS_CHOICE = "select from_hour, reason from intermediate.int_ops_daily_recompute_from"
# the two marts, the copies of what their choosers compare (built after them) and the copies
# the choosers before the health's compare with (int_gpu_hour_states_recompute_from's)
SELECT = (
    "+int_fleet_health_inputs +int_ops_daily_inputs +int_gpu_unit_inputs "
    "+int_gpu_hour_state_inputs +int_node_hour_cost_inputs +fct_xid_events"
)
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
XID_GAUGE = "DCGM_FI_DEV_XID_ERRORS"


def _xid_samples(day: int, t0: datetime) -> list[dict]:
    """The XID samples of day `day` (0: D1) beside the utilisation (see the module's text)."""
    if day == 0:
        return [
            dcgm("n-1", 0, t0 + 12 * HOUR, XID_COUNT, 2.0, labels='{"xid": "31"}'),
            dcgm("n-1", 1, t0 + 5 * HOUR, XID_GAUGE, 43.0),
        ]
    if day == 2:
        return [
            dcgm("n-1", 0, t0 + 6 * HOUR, XID_COUNT, 3.0, labels='{"xid": "31"}'),
            dcgm("n-1", 1, t0 + 8 * HOUR, XID_GAUGE, 13.0),
            dcgm("n-1", 1, t0 + 9 * HOUR, XID_COUNT, 1.0, labels='{"err_code": "43"}'),
        ]
    return []


def _land_events(home: Path, ended: datetime | None) -> None:
    """The events export: `n-1` DOWN since D1 20:00, closed at `ended` (None: still open),
    landed in its start day's partition (as ingest lands an event that closed since)."""
    event = {
        "cluster": "c1",
        "node": "n-1",
        "time_start": T1 + 20 * HOUR,
        "time_end": ended,
        "state": "DOWN",
        "reason": "PSU",
        "x_source": "slurm.events",
        "x_source_file": "events.txt",
    }
    rows = frame("slurm_node_events", [event])
    land(home, "slurm_node_events", "slurm.events", f"date={D1}", rows)


def _job_911(snapshot: date, started: bool) -> dict:
    """Job 911 as the export of `snapshot` shows it: PENDING since D1 10:00, or started at D2
    23:00 and COMPLETED at D3 03:00."""
    submitted = T1 + 10 * HOUR
    row = slurm_job("911", "n-1", 1, T1 + 47 * HOUR, T1 + 51 * HOUR)
    row |= {"submit": submitted, "eligible": submitted, "x_snapshot_date": snapshot}
    if not started:
        row |= {"start": None, "end": None, "elapsed_seconds": 0, "state": "PENDING", "hosts": []}
    return row


def _land_sacct(home: Path, day: date, started: bool) -> None:
    rows = [_job_911(day, started)]
    land(home, "slurm_jobs", "slurm", f"date={day}", frame("slurm_jobs", rows))


def _land_first(home: Path) -> None:
    """The landing zone as first delivered."""
    one_node_home(
        home,
        gpus=2,
        teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
        days=[D1, D2, D3],
    )
    for n, day in enumerate((D1, D2, D3)):
        t0 = T1 + n * DAY
        rows = [dcgm("n-1", gpu, t, UTIL, 0.0) for gpu in (0, 1) for t in every(t0, t0 + DAY, 300)]
        rows += _xid_samples(n, t0)
        land(home, "dcgm_samples", "dcgm", f"date={day}", frame("dcgm_samples", rows))
        _land_sacct(home, day, started=False)
    _land_events(home, ended=None)


def _build(home: Path, run_id: str, range_d3: bool) -> None:
    dbt_build_models_of_day(home, SELECT, run_id=run_id, day=D3 if range_d3 else None)


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    daily = tmp_path_factory.mktemp("health_ops_daily")
    _land_first(daily)
    _build(daily, "first", range_d3=False)
    out: dict[str, Any] = {"daily": daily}
    out["first"] = {q: built_rows(daily, q) for q in (HEALTH, OPS, XIDS)}
    for n in (1, 2, 3):
        if n == 1:
            _land_events(daily, ended=T1 + 22 * HOUR)
        if n == 2:
            _land_sacct(daily, D3, started=True)
        _build(daily, f"later-{n}", range_d3=True)
        queries = (HEALTH, OPS, XIDS, HEALTH_CHOICE, OPS_CHOICE)
        out[n] = {q: built_rows(daily, q) for q in queries}
        if n < 3:
            full = tmp_path_factory.mktemp(f"health_ops_full_{n}")
            out[n]["full"] = full_build_rows(daily, full, SELECT, (HEALTH, OPS, XIDS))
    yield out


DAY_S = 86400.0


def test_as_first_delivered_an_open_outage_and_a_pending_job_cover_every_later_day(homes):
    first = homes["first"]
    assert first[HEALTH] == [
        (D1, "n-1", DAY_S, 0.0, 1, 4 * 3600.0),
        (D2, "n-1", DAY_S, 0.0, 0, DAY_S),
        (D3, "n-1", DAY_S, 0.0, 0, DAY_S),
    ]
    # ended, completed, started, queue wait p50, pending, pending GPUs, outages started, ended,
    # MTTR
    assert first[OPS] == [
        (D1, 0, 0, 0, None, 1, 1, 1, 0, None),
        (D2, 0, 0, 0, None, 1, 1, 0, 0, None),
        (D3, 0, 0, 0, None, 1, 1, 0, 0, None),
    ]


def test_an_outage_closed_days_later_recomputes_both_marts_from_its_day(homes) -> None:
    after = homes[1]
    assert after[HEALTH_CHOICE] == [(D1_EPOCH, "health events changed")]
    assert after[OPS_CHOICE] == [(D1_EPOCH, "runs or outages changed")]
    # closed at D1 22:00: 2 h on D1, nothing on D2 and D3
    assert after[HEALTH] == [
        (D1, "n-1", DAY_S, 0.0, 1, 2 * 3600.0),
        (D2, "n-1", DAY_S, 0.0, 0, 0.0),
        (D3, "n-1", DAY_S, 0.0, 0, 0.0),
    ]
    assert after[OPS] == [
        (D1, 0, 0, 0, None, 1, 1, 1, 1, 7200.0),
        (D2, 0, 0, 0, None, 1, 1, 0, 0, None),
        (D3, 0, 0, 0, None, 1, 1, 0, 0, None),
    ]


def test_a_pending_job_started_days_later_recomputes_the_ops_from_its_start(homes) -> None:
    after = homes[2]
    assert after[OPS_CHOICE] == [(D2_EPOCH, "runs or outages changed")]
    assert after[HEALTH_CHOICE] == [(D2_EPOCH, "range")]
    assert after[OPS] == [
        (D1, 0, 0, 0, None, 1, 1, 1, 1, 7200.0),
        (D2, 0, 0, 1, 37 * 3600.0, 0, 0, 0, 0, None),
        (D3, 1, 1, 0, None, 0, 0, 0, 0, None),
    ]
    assert after[HEALTH] == homes[1][HEALTH]


def test_nothing_new_recomputes_the_range_only(homes) -> None:
    after = homes[3]
    assert after[HEALTH_CHOICE] == [(D2_EPOCH, "range")]
    assert after[OPS_CHOICE] == [(D3_EPOCH, "range")]
    assert after[HEALTH] == homes[2][HEALTH]
    assert after[OPS] == homes[2][OPS]


# day, GPU, XID, XIDs, counted from the gauge
XID_ROWS = [
    (D1, 0, 31, 2, False),  # the count's first sample, whole
    (D1, 1, 43, 1, True),  # no count on D1: the gauge
    (D3, 0, 31, 1, False),  # 3 - 2, D1's last count
    (D3, 1, 43, 1, False),  # the count; the gauge's 13 is not counted that day
]


def test_xids_of_a_day_compare_its_first_count_with_the_last_days_before(homes) -> None:
    assert homes["first"][XIDS] == XID_ROWS
    # each run of D3 alone (nothing of D1 or D2 read again but the stored last counts)
    for n in (1, 2, 3):
        assert homes[n][XIDS] == XID_ROWS, n


@pytest.mark.parametrize("n", [1, 2])
def test_both_marts_equal_a_full_build_of_the_same_data(homes, n: int) -> None:
    assert homes[n][HEALTH] == homes[n]["full"][HEALTH]
    assert homes[n][OPS] == homes[n]["full"][OPS]
    assert homes[n][XIDS] == homes[n]["full"][XIDS]


def _tested(home: Path, select: str) -> dict[str, tuple[str, int | None]]:
    """Run the data tests `select` names on the home's build: per tested model, the status
    and number of failing rows."""
    result = dbt_invoke(home, select)
    return {
        str(getattr(r.node, "attached_node", "")).split(".")[-1]: (str(r.status), r.failures)
        for r in result.result
    }


def test_the_choice_and_range_tests_fail_on_bad_rows(homes, tmp_path: Path) -> None:
    # the one-node tests that stand for several (macros/generic_tests.sql): a health row whose
    # downtime exceeds the day and one with a negative ECC count (each failing row names its
    # first out-of-range column); a chooser with a reason it does not know; then one with two
    # rows (a failing chooser test skips its model's tests, hence two builds)
    home = tmp_path / "bad"
    shutil.copytree(homes["daily"] / "build", home / "build")
    con = duckdb.connect(str(home / "build/warehouse.duckdb"))
    try:
        con.execute(
            f"update main.fct_fleet_health_daily set downtime_seconds = 90000 "
            f"where day_epoch = {D1_EPOCH}"
        )
        con.execute(
            f"update main.fct_fleet_health_daily set ecc_sbe_errors = -1 "
            f"where day_epoch = {D2_EPOCH}"
        )
        con.execute("update intermediate.int_ops_daily_recompute_from set reason = 'because'")
    finally:
        con.close()
    tested = _tested(home, "test_name:one_chosen_hour test_name:accepted_ranges")
    assert {m: tested[m] for m in ("fct_fleet_health_daily", "fct_gpu_hours")} == {
        "fct_fleet_health_daily": ("fail", 2),
        "fct_gpu_hours": ("pass", 0),
    }
    assert tested["int_ops_daily_recompute_from"] == ("fail", 1)  # reason: because
    assert tested["int_gpu_units_recompute_from"] == ("pass", 0)
    con = duckdb.connect(str(home / "build/warehouse.duckdb"))
    try:
        con.execute(
            "insert into intermediate.int_fleet_health_recompute_from "
            "select * from intermediate.int_fleet_health_recompute_from"
        )
        con.execute("update intermediate.int_ops_daily_recompute_from set reason = 'range'")
        # a key column null on one day and repeated on another (primary_key: two failing rows,
        # the null key and the repeated one)
        con.execute(f"update main.fct_ops_daily set day = null where day_epoch = {D3_EPOCH}")
        con.execute(
            f"insert into main.fct_ops_daily select * from main.fct_ops_daily "
            f"where day_epoch = {D2_EPOCH}"
        )
    finally:
        con.close()
    tested = _tested(
        home,
        "test_name:one_chosen_hour fct_ops_daily,test_name:primary_key "
        "int_runs,test_name:primary_key",
    )
    assert tested["int_fleet_health_recompute_from"] == ("fail", 1)  # rows: 2
    assert tested["fct_ops_daily"] == ("fail", 2)  # the null day, the repeated D2
    assert tested["int_runs"] == ("pass", 0)  # another primary key
    assert tested["int_gpu_units_recompute_from"] == ("pass", 0)
    # a column the grain test checks for nulls (`not_null`) null on both GPUs' rows of D1: one
    # failing row, `null t` on 2 rows (a test of its own: the models after it would be skipped)
    con = duckdb.connect(str(home / "build/history.duckdb"))
    try:
        con.execute(
            f"update intermediate.int_gpu_last_samples set t = null where day_epoch = {D1_EPOCH}"
        )
    finally:
        con.close()
    tested = _tested(
        home,
        "int_gpu_last_samples,test_name:unique_combination "
        "int_gpu_label_days,test_name:unique_combination",
    )
    assert tested["int_gpu_last_samples"] == ("fail", 1)
    assert tested["int_gpu_label_days"] == ("pass", 0)
    assert tested["int_gpu_last_samples"] == ("fail", 1)  # null t
    assert tested["int_gpu_label_days"] == ("pass", 0)  # nothing null
