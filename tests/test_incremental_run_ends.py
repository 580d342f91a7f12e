"""A later sacct export that ends, moves or withdraws a job of an earlier day (docs/operations.md,
"Incremental runs"): the scheduler's allocation per run and day (`int_run_allocated_days`) and
the team days (`fct_team_gpu_hours_daily`) are stored by day, and a run must recompute them
from the first day on which a run's allocation changed, not only its range. A hand-made fleet,
every figure worked out here by hand.

Two accounted days, 2026-11-20 (D1) and 2026-11-21 (D2); one on-prem node `n-1` with 2 GPUs at
0 % both days (DCGM every 300 s), no bill. As first delivered, D1's sacct export (taken before
the day ended) shows, both on `research`'s account and 1 GPU,
- job 902 RUNNING since D1 12:00, and
- job 903 RUNNING since D1 20:00,
and D2's export nothing. Built in full: both are allocated to the end of the window, 902 12 h
and 903 4 h on D1, each 24 h on D2. Research: D1 16 GPU-hours (2 runs), D2 48 (2 runs).

Then D2's export is delivered again twice, each time recomputed as `fleetledger run --date D2`
does (the range: D2 alone):
1. it shows job 902 COMPLETED at D1 18:00: its allocation changed from its end on, D1, so the
   team days recompute from D1 (`runs changed`), not D2. Research: D1 10 GPU-hours (6 + 4),
   D2 24 (903 alone). Left at the range, D1 would keep 16.
2. it also shows job 903 COMPLETED at D2 04:00 under the `data` account: a new team changes
   every day of the run, from its start (D1), not from its end (D2). Research: D1 6 (1 run), no
   D2 row; data: D1 4, D2 4 (1 run each). Left at its end, D1 would keep 903 under research.
Each time the allocation equals a full build of the same landed data. (The runs' busy and idle
GPU-hours of D1 are those D1's run mapped from the scheduler's knowledge then:
docs/operations.md; they are not compared here.) The builds select what the two models need
(and the copies of what their choosers compare).
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from dbt_in_process import dbt_build_models_of_day, full_build_rows
from edge_rows import built_rows, dcgm, every, frame, one_node_home, slurm_job

from ingest.core.landing import land

D1, D2 = date(2026, 11, 20), date(2026, 11, 21)
T1 = datetime(2026, 11, 20, tzinfo=UTC)
T2 = T1 + timedelta(days=1)
HOUR = timedelta(hours=1)
UTIL = "DCGM_FI_DEV_GPU_UTIL"
D1_EPOCH = int(T1.timestamp())

TEAM_DAYS = (
    "select day, team, runs, round(allocated_gpu_hours, 6) from main.fct_team_gpu_hours_daily "
    "order by day, team"
)
ALLOCATED = (
    "select day_epoch, run_id, team, allocated_gpu_seconds "
    "from history.intermediate.int_run_allocated_days order by day_epoch, run_id"
)
CHOICE = "select from_hour, reason from intermediate.int_team_days_recompute_from"
# what the two models need, the copy of the runs they were built from (built after both) and
# the copies the choosers before theirs compare with (int_gpu_hour_states_recompute_from's)
SELECT = (
    "+int_run_allocation_inputs +int_gpu_unit_inputs +int_gpu_hour_state_inputs "
    "+int_node_hour_cost_inputs"
)


def _job(job: str, start: datetime, end: datetime | None, snapshot: date, **kw: str) -> dict:
    """A 1-GPU job on `n-1` as an export of `snapshot` shows it: RUNNING while `end` is None."""
    row = slurm_job(job, "n-1", 1, start, end or start + HOUR, **kw) | {"x_snapshot_date": snapshot}
    if end is None:
        row |= {"end": None, "elapsed_seconds": None, "state": "RUNNING"}
    return row


def _land_first(home: Path) -> None:
    """The landing zone as first delivered."""
    teams = [
        {"team": "research", "match": {"slurm_account": ["research"]}},
        {"team": "data", "match": {"slurm_account": ["data"]}},
    ]
    one_node_home(home, gpus=2, teams=teams, days=[D1, D2])
    for day, t0 in ((D1, T1), (D2, T2)):
        rows = [
            dcgm("n-1", gpu, t, UTIL, 0.0) for gpu in (0, 1) for t in every(t0, t0 + 24 * HOUR, 300)
        ]
        land(home, "dcgm_samples", "dcgm", f"date={day}", frame("dcgm_samples", rows))
    d1_jobs = [_job("902", T1 + 12 * HOUR, None, D1), _job("903", T1 + 20 * HOUR, None, D1)]
    land(home, "slurm_jobs", "slurm", f"date={D1}", frame("slurm_jobs", d1_jobs))
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", []))


def _redeliver_d2(home: Path, second: bool) -> None:
    """D2's export delivered again: 902 ended; the second time 903 ended and moved too."""
    jobs = [_job("902", T1 + 12 * HOUR, T1 + 18 * HOUR, D2)]
    if second:
        jobs.append(_job("903", T1 + 20 * HOUR, T2 + 4 * HOUR, D2, account="data"))
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", jobs))


def _build(home: Path, run_id: str, range_d2: bool) -> None:
    dbt_build_models_of_day(home, SELECT, run_id=run_id, day=D2 if range_d2 else None)


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    daily = tmp_path_factory.mktemp("run_ends_daily")
    _land_first(daily)
    _build(daily, "first", range_d2=False)
    out: dict[str, Any] = {"first": built_rows(daily, TEAM_DAYS)}
    for n in (1, 2):
        _redeliver_d2(daily, second=n == 2)
        _build(daily, f"redelivered-{n}", range_d2=True)
        out[n] = {q: built_rows(daily, q) for q in (TEAM_DAYS, ALLOCATED, CHOICE)}
        full = tmp_path_factory.mktemp(f"run_ends_full_{n}")
        out[n]["full"] = full_build_rows(daily, full, SELECT, (TEAM_DAYS, ALLOCATED))
    yield out


def test_as_first_delivered_running_jobs_are_allocated_to_the_end_of_the_window(homes) -> None:
    # research on D1: 902 from 12:00 (12 h) + 903 from 20:00 (4 h); on D2 both all day
    assert homes["first"] == [(D1, "research", 2, 16.0), (D2, "research", 2, 48.0)]


def test_a_job_that_ended_before_its_day_did_recomputes_from_its_end(homes) -> None:
    after = homes[1]
    assert after[CHOICE] == [(D1_EPOCH, "runs changed")]
    # 902 ended at D1 18:00 (6 h on D1, none on D2); 903 still runs (4 h on D1, 24 on D2)
    assert after[TEAM_DAYS] == [(D1, "research", 2, 10.0), (D2, "research", 1, 24.0)]
    assert after[ALLOCATED] == [
        (D1_EPOCH, "slurm:c1:902:1", "research", 6 * 3600.0),
        (D1_EPOCH, "slurm:c1:903:1", "research", 4 * 3600.0),
        (D1_EPOCH + 86400, "slurm:c1:903:1", "research", 24 * 3600.0),
    ]


def test_a_job_moved_to_another_team_recomputes_from_its_start(homes) -> None:
    after = homes[2]
    assert after[CHOICE] == [(D1_EPOCH, "runs changed")]
    # 903 ended at D2 04:00 under data: 4 h on D1 and 4 h on D2, both data's
    assert after[TEAM_DAYS] == [
        (D1, "data", 1, 4.0),
        (D1, "research", 1, 6.0),
        (D2, "data", 1, 4.0),
    ]
    assert after[ALLOCATED] == [
        (D1_EPOCH, "slurm:c1:902:1", "research", 6 * 3600.0),
        (D1_EPOCH, "slurm:c1:903:1", "data", 4 * 3600.0),
        (D1_EPOCH + 86400, "slurm:c1:903:1", "data", 4 * 3600.0),
    ]


@pytest.mark.parametrize("n", [1, 2])
def test_the_allocation_equals_a_full_build_of_the_same_data(homes, n: int) -> None:
    after = homes[n]
    assert after[TEAM_DAYS] == after["full"][TEAM_DAYS]
    assert after[ALLOCATED] == after["full"][ALLOCATED]
