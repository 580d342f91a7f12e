"""A GPU replaced in its slot (an RMA: a new UUID at the same host and GPU index; docs/metrics.md,
"Replaced GPUs"): a hand-made fleet the generator never produces, built by the whole dbt project,
every expected figure worked out here by hand.

Two accounted days, 2026-11-16 (D1) and 2026-11-17 (D2), DCGM every 60 s. `rma-1` (azure,
2 GPUs): one FOCUS line of $96 a day ($4/h: $2 a GPU-hour).
- slot 0: `GPU-old` reports D1 00:00-12:00; nothing 12:00-14:00 (the swap); `GPU-new` from
  D1 14:00 to the end of D2. The new UUID sorts first: the old code picked the smallest UUID
  of a slot for all of its history.
- slot 1: `GPU-rma-1-1` throughout.
- Slurm job 702 holds the whole node (2 GPUs, no labels: node evidence, exact) D1 10:00-16:00;
  every reporting GPU is at 90 % then, 0 % otherwise.
- Slurm job 701 holds one GPU D2 00:00-12:00; the new GPU's samples carry hpc_job="701" at 90 %.
- a third GPU, `GPU-extra`, reports at index 2 on D2 00:00-01:00 though the inventory gives the
  node 2 GPUs: in no mart, and a data-health warning says so.
- `half-1` (site az2, 4 GPUs in the inventory, no bill): only indices 0 and 2 ever report (D1):
  1 and 3 are counted down all along, and a data-health warning says so.
- Slurm job 703 asks for 1 GPU of the node D2 12:00-18:00 with no labels (node evidence,
  estimated): half of each of the node's two boards then (the new one and slot 1), idle.

Before the fix, slot 0 was the old GPU for both days: down from its last sample to the end of
D2, the new GPU's samples joined nothing, job 701 cost $0 and job 702 lost its hours on the
new board.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from edge_rows import built_warehouse, dcgm, every, focus_line, frame, slurm_job

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from fleetledger.forecasting.series import fleet_gpus
from ingest.core.landing import land, write_schema_files

D1, D2 = date(2026, 11, 16), date(2026, 11, 17)
T1 = datetime(2026, 11, 16, tzinfo=UTC)
T2 = T1 + timedelta(days=1)
HOUR = timedelta(hours=1)
OLD, NEW, OTHER = "GPU-zzz-old", "GPU-aaa-new", "GPU-rma-1-1"


def config() -> Config:
    node = {"provider": "azure", "site": "az1", "gpu_model": "H100", "cluster": "c1"}
    return Config(
        inventory=[
            {"host": "rma-1", "resource_id": "vm-rma", "gpus": 2, **node},
            {"host": "half-1", "resource_id": "vm-half", "gpus": 4, **node, "site": "az2"},
        ],
        teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
    )


def build(home: Path) -> None:
    write_schema_files(home)
    write_config_tables(config(), home)
    record_accounted_days(home, [D1, D2])
    lines = [
        focus_line(str(n + 1), "vm-rma", day, day + timedelta(days=1), 96.0)
        for n, day in enumerate((T1, T2))
    ]
    land(home, "focus_lines", "azure-focus", "period=2026-11", frame("focus_lines", lines))

    rows: dict[date, list[dict[str, Any]]] = {D1: [], D2: []}
    for t in every(T1, T2 + 24 * HOUR, 60):
        day = D1 if t < T2 else D2
        in_702 = T1 + 10 * HOUR <= t < T1 + 16 * HOUR
        in_701 = T2 <= t < T2 + 12 * HOUR
        util = 90.0 if in_702 else 0.0
        if t < T1 + 12 * HOUR:
            rows[day].append(dcgm("rma-1", 0, t, "DCGM_FI_DEV_GPU_UTIL", util) | {"uuid": OLD})
        elif t >= T1 + 14 * HOUR:
            labels = {"hpc_job": "701"} if in_701 else {}
            value = 90.0 if in_701 else util
            sample = dcgm("rma-1", 0, t, "DCGM_FI_DEV_GPU_UTIL", value, **labels)
            rows[day].append(sample | {"uuid": NEW})
        rows[day].append(dcgm("rma-1", 1, t, "DCGM_FI_DEV_GPU_UTIL", util))
        if t < T2:
            rows[day] += [dcgm("half-1", g, t, "DCGM_FI_DEV_GPU_UTIL", 0.0) for g in (0, 2)]
        if T2 <= t < T2 + HOUR:
            extra = dcgm("rma-1", 2, t, "DCGM_FI_DEV_GPU_UTIL", 50.0)
            rows[day].append(extra | {"uuid": "GPU-extra"})
    for day, day_rows in rows.items():
        land(home, "dcgm_samples", "dcgm", f"date={day}", frame("dcgm_samples", day_rows))

    jobs = [
        slurm_job("702", "rma-1", 2, T1 + 10 * HOUR, T1 + 16 * HOUR),
        slurm_job("701", "rma-1", 1, T2, T2 + 12 * HOUR),
        slurm_job("703", "rma-1", 1, T2 + 12 * HOUR, T2 + 18 * HOUR),
    ]
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", jobs))
    dbt_build(home, "fleetledger", run_id="rma-run")


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("rma_fleet")
    build(home)
    yield from built_warehouse(home)


def gpu_day(con: duckdb.DuckDBPyConnection, gpu: str, day: date) -> tuple:
    """Hours, then busy / allocated-idle / unallocated / down GPU-hours and cost of a GPU's day
    (rounded: a sample covers up to 2 scrapes past itself)."""
    row = con.execute(
        "select count(*), sum(busy_seconds) / 3600, sum(allocated_idle_seconds) / 3600, "
        "sum(unallocated_seconds) / 3600, sum(down_seconds) / 3600, sum(cost) "
        "from fct_gpu_hours where gpu_uuid = ? and cast(hour as date) = ?",
        [gpu, day],
    ).fetchone()
    assert row is not None
    return tuple(round(x or 0, 2) for x in row)


def test_both_boards_are_gpus_of_the_slot_each_in_its_own_time(con) -> None:
    rows = con.execute(
        "select gpu_uuid, host, gpu_index, reported, in_service_from, in_service_to "
        "from dim_gpus where host = 'rma-1' order by gpu_index, in_service_from nulls first"
    ).fetchall()
    assert rows == [
        (OLD, "rma-1", 0, True, None, T1 + 14 * HOUR),
        (NEW, "rma-1", 0, True, T1 + 14 * HOUR, None),
        (OTHER, "rma-1", 1, True, None, None),
    ]


def test_every_slot_has_one_gpu_every_hour_and_the_bill_is_whole(con) -> None:
    # 2 slots x 48 accounted hours, never two GPUs of one slot in the same hour
    (n, slot_hours) = con.execute(
        "select count(*), count(distinct gpu_index || '@' || cast(hour as string)) "
        "from fct_gpu_hours where host = 'rma-1'"
    ).fetchone()
    assert (n, slot_hours) == (96, 96)
    # $96 x 2 days, every dollar on a GPU-hour: the old board's 14 hours at $2, the new one's 34
    assert con.execute("select sum(cost) from fct_gpu_hours").fetchone()[0] == pytest.approx(192)


def test_the_old_board_until_the_swap_the_new_one_after(con) -> None:
    # old, D1 00:00-14:00: job 702 holds it 10:00-14:00 (2 h of 90 % samples, then the swap's
    # 2 h no sample covers: held, so busy and unobserved), unallocated 00:00-10:00
    assert gpu_day(con, OLD, D1) == (14, 4.0, 0.0, 10.0, 0.0, 28.0)
    assert gpu_day(con, OLD, D2) == (0, 0, 0, 0, 0, 0)
    # new, D1 14:00-24:00: job 702 14:00-16:00 busy, then unallocated; D2: job 701 00:00-12:00
    # busy, job 703 half of it 12:00-18:00 (3 allocated-idle hours), the rest unallocated
    assert gpu_day(con, NEW, D1) == (10, 2.0, 0.0, 8.0, 0.0, 20.0)
    assert gpu_day(con, NEW, D2) == (24, 12.0, 3.0, 9.0, 0.0, 48.0)
    # the other slot: job 702's 6 hours on D1, idle otherwise; D2: half of it to job 703
    assert gpu_day(con, OTHER, D1) == (24, 6.0, 0.0, 18.0, 0.0, 48.0)
    assert gpu_day(con, OTHER, D2) == (24, 0.0, 3.0, 21.0, 0.0, 48.0)
    # no down second anywhere: the swap's silent hours were held by job 702
    down = "select sum(down_seconds) from fct_gpu_hours where host = 'rma-1'"
    assert con.execute(down).fetchone()[0] == 0


def test_runs_hold_the_board_that_was_in_the_slot(con) -> None:
    costs = dict(
        (r[0], r[1:])
        for r in con.execute(
            "select job_id, round(busy_gpu_hours, 2), round(allocated_idle_gpu_hours, 2), "
            "round(cost, 2), mapping from fct_run_costs "
            "join fct_runs using (run_id) order by job_id"
        ).fetchall()
    )
    # 701: 12 busy hours on the new board at $2; 702: the whole node for 6 h = 12 GPU-hours
    # (old 10:00-14:00, new 14:00-16:00, the other slot 10:00-16:00) at $2; 703: 1 GPU for
    # 6 h, half of each of the two boards in their slots then (not a third of three)
    assert costs == {
        "701": (12.0, 0.0, 24.0, "exact"),
        "702": (12.0, 0.0, 24.0, "exact"),
        "703": (0.0, 6.0, 12.0, "estimated"),
    }
    held = dict(
        con.execute(
            "select gpu_uuid, round(sum(busy_seconds) / 3600, 2) from fct_run_gpu_hours "
            "join fct_runs using (run_id) where job_id = '702' group by gpu_uuid"
        ).fetchall()
    )
    assert held == {OLD: 4.0, NEW: 2.0, OTHER: 6.0}


def test_the_forecast_counts_the_boards_in_their_slots(con) -> None:
    # runway compares peak GPU demand with the fleet: 2 slots at az1, not 3 boards
    assert fleet_gpus(con, {"dim_gpus"}) == {"site:az1": 2, "site:az2": 4, "total": 6}


def test_a_gpu_beyond_the_inventory_count_is_a_warning(con) -> None:
    found = con.execute(
        'select source, "check", severity, count, message from fct_data_health '
        "where \"check\" like 'gpu_index_not_in_inventory:%'"
    ).fetchall()
    assert found == [
        (
            "dcgm",
            "gpu_index_not_in_inventory:rma-1",
            "warning",
            60,
            "rma-1 reported 1 GPU(s) at indices 2-2 (60 samples) beyond the inventory's "
            "`gpus: 2`: their samples are in no mart; set the host's `gpus` to the GPUs it has",
        )
    ]
    assert (
        con.execute("select count(*) from dim_gpus where gpu_uuid = 'GPU-extra'").fetchone()[0] == 0
    )


def test_inventory_gpus_that_never_report_beside_ones_that_do_are_a_warning(con) -> None:
    # half-1's indices 1 and 3: down every hour of D1, when its other GPUs report
    found = con.execute(
        'select source, "check", severity, count, message from fct_data_health '
        "where \"check\" like 'gpu_never_reported:%'"
    ).fetchall()
    assert found == [
        (
            "dcgm",
            "gpu_never_reported:half-1",
            "warning",
            2,
            "half-1: 2 of its 4 inventory GPUs (index 1, 3) never reported while its other GPUs"
            " did: counted down, their cost idle; check the GPUs, or set the host's `gpus` to"
            " the GPUs it has",
        )
    ]
    down = con.execute(
        "select gpu_index, sum(down_seconds) / 3600 from fct_gpu_hours "
        "where host = 'half-1' and cast(hour as date) = ? group by gpu_index order by 1",
        [D1],
    ).fetchall()
    assert down == [(0, 0.0), (1, 24.0), (2, 0.0), (3, 24.0)]
