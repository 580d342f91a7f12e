"""Which GPU units exist when, and whose labels are whose (issue 12, items 5 and 6;
docs/metrics.md, "MIG layouts" and "Run to GPU mapping"): a hand-made fleet the generator never
produces, built by the whole dbt project, every expected figure worked out here by hand.

Two accounted days, 2026-11-16 (D1) and 2026-11-17 (D2), DCGM every 60 s.
- `mig-1` (azure, 1 H100, $168 a day: $7/h, so a 1g slice is $1/h). D1: MIG-partitioned into
  seven 1g.10gb instances; Slurm job 601 holds instance 1 (hpc_job label) 00:00-06:00 at 90 %;
  nothing reports 03:00-04:00. D2: MIG off, the whole GPU reports; job 602 holds it (hpc_job
  label) 00:00-12:00 at 80 %, idle after.
- `hpc-a` (cluster c1, 2 GPUs, $96 a day: $2 a GPU-hour) and `hpc-b` (cluster c2, 2 GPUs,
  $192 a day: $4 a GPU-hour): both clusters run a job 51234 on D1 00:00-04:00 on all of their
  node's GPUs, each labelled hpc_job="51234"; hpc-a's GPUs at 90 %, hpc-b's at 2 % (under the
  5 % idle threshold). hpc-a's GPU 1 also carries a stray hpc_job="601" label 04:00-05:00 (job
  601 runs then, but on mig-1): evidence for no run.
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
from ingest.core.landing import land, write_schema_files

D1, D2 = date(2026, 11, 16), date(2026, 11, 17)
T1 = datetime(2026, 11, 16, tzinfo=UTC)
T2 = T1 + timedelta(days=1)
HOUR = timedelta(hours=1)


def config() -> Config:
    node = {"provider": "azure", "site": "az1", "gpu_model": "H100"}
    return Config(
        inventory=[
            {"host": "mig-1", "resource_id": "vm-mig", "gpus": 1, "cluster": "c1", **node},
            {"host": "hpc-a", "resource_id": "vm-a", "gpus": 2, "cluster": "c1", **node},
            {"host": "hpc-b", "resource_id": "vm-b", "gpus": 2, "cluster": "c2", **node},
        ],
        teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
    )


def build(home: Path) -> None:
    write_schema_files(home)
    write_config_tables(config(), home)
    record_accounted_days(home, [D1, D2])
    lines = [
        focus_line(str(n + 1), resource, day, day + timedelta(days=1), cost)
        for n, (resource, day, cost) in enumerate(
            (r, d, c)
            for r, c in (("vm-mig", 168.0), ("vm-a", 96.0), ("vm-b", 192.0))
            for d in (T1, T2)
        )
    ]
    land(home, "focus_lines", "azure-focus", "period=2026-11", frame("focus_lines", lines))

    d1: list[dict[str, Any]] = []
    # mig-1 D1: the device (power only: GPU_UTIL is blank under MIG) and seven 1g instances;
    # nothing at all 03:00-04:00
    for t in every(T1, T1 + 24 * HOUR, 60):
        if T1 + 3 * HOUR <= t < T1 + 4 * HOUR:
            continue
        d1.append(dcgm("mig-1", 0, t, "DCGM_FI_DEV_POWER_USAGE", 100.0))
        for i in range(1, 8):
            held = i == 1 and t < T1 + 6 * HOUR
            d1.append(
                dcgm(
                    "mig-1",
                    0,
                    t,
                    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
                    0.9 if held else 0.0,
                    mig_instance=str(i),
                    mig_profile="1g.10gb",
                    **({"hpc_job": "601"} if held else {}),
                )
            )
    # hpc-a / hpc-b D1: job 51234 of each cluster on its own node, 00:00-04:00
    for t in every(T1, T1 + 24 * HOUR, 60):
        early = t < T1 + 4 * HOUR
        labels = {"hpc_job": "51234"} if early else {}
        stray = {"hpc_job": "601"} if T1 + 4 * HOUR <= t < T1 + 5 * HOUR else {}
        for g in range(2):
            a_labels = stray if g == 1 and stray else labels
            d1.append(dcgm("hpc-a", g, t, "DCGM_FI_DEV_GPU_UTIL", 90.0 if early else 0, **a_labels))
            d1.append(dcgm("hpc-b", g, t, "DCGM_FI_DEV_GPU_UTIL", 2.0 if early else 0, **labels))
    land(home, "dcgm_samples", "dcgm", f"date={D1}", frame("dcgm_samples", d1))
    # mig-1 D2: MIG off, the whole GPU; job 602 00:00-12:00
    d2 = [
        dcgm(
            "mig-1",
            0,
            t,
            "DCGM_FI_DEV_GPU_UTIL",
            80.0 if t < T2 + 12 * HOUR else 0.0,
            **({"hpc_job": "602"} if t < T2 + 12 * HOUR else {}),
        )
        for t in every(T2, T2 + 24 * HOUR, 60)
    ]
    land(home, "dcgm_samples", "dcgm", f"date={D2}", frame("dcgm_samples", d2))

    jobs = [
        slurm_job("601", "mig-1", 1, T1, T1 + 6 * HOUR, cluster="c1"),
        slurm_job("602", "mig-1", 1, T2, T2 + 12 * HOUR, cluster="c1"),
        slurm_job("51234", "hpc-a", 2, T1, T1 + 4 * HOUR, cluster="c1"),
        slurm_job("51234", "hpc-b", 2, T1, T1 + 4 * HOUR, cluster="c2"),
    ]
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", jobs))
    dbt_build(home, "fleetledger", run_id="layout-run")


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("layout_fleet")
    build(home)
    yield from built_warehouse(home)


def day_states(con: duckdb.DuckDBPyConnection, host: str, day: date) -> tuple:
    return con.execute(
        "select sum(busy_seconds), sum(allocated_idle_seconds), sum(unallocated_seconds), "
        "sum(down_seconds), sum(telemetry_gap_seconds), sum(cost) from fct_gpu_hours "
        "where host = ? and cast(hour as date) = ?",
        [host, day],
    ).fetchone()


def run_cost(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple:
    return con.execute(
        "select busy_gpu_hours, allocated_idle_gpu_hours, cost, mapping from fct_run_costs "
        "where run_id = ?",
        [run_id],
    ).fetchone()


def test_a_gpu_partitioned_on_day_1_and_whole_on_day_2(con) -> None:
    """D2 (whole GPU): job 602 holds the whole GPU 12 h busy (12 GPU-hours x $7 = $84), the other
    12 h are unallocated (43,200 s), nothing is down: no phantom 1g slices. Before the fix D2 had
    the seven D1 instances as its only units, all missing while the device reported (down), and
    602 held a unit that did not exist ($0)."""
    busy, idle, unalloc, down, gap, cost = day_states(con, "mig-1", D2)
    assert (busy, idle, down, gap) == (pytest.approx(43_200.0), 0, 0, 0)
    assert unalloc == pytest.approx(43_200.0)
    assert cost == pytest.approx(168.0)
    assert run_cost(con, "slurm:c1:602:1") == (
        pytest.approx(12.0),
        0,
        pytest.approx(84.0),
        "exact",
    )


def test_day_1_keeps_its_slices_through_an_hour_without_reports(con) -> None:
    """D1 (seven 1g slices, 1/7 each): job 601 holds slice 1 for 6 h = 6/7 GPU-hours, $6. In
    03:00-04:00 nothing reports; the 02:59 samples cover to 03:01, and the hour keeps the
    layout of 02:00 (the last one reported), so 601 still holds its slice: 60 s covered busy +
    3,540 s unobserved (busy). The GPU's day: busy 6 x 3600 / 7 = 3,085.714 s, unallocated
    86,400 - 3,085.714 = 83,314.286 s, of which slices 2-7's 3,540 s each in hour 03 are a
    telemetry gap: 6 x 3,540 / 7 = 3,034.286 s; nothing down (no failure signal)."""
    busy, idle, unalloc, down, gap, cost = day_states(con, "mig-1", D1)
    assert busy == pytest.approx(6 * 3600 / 7)
    assert (idle, down) == (0, 0)
    assert unalloc == pytest.approx(86_400 - 6 * 3600 / 7)
    assert gap == pytest.approx(6 * 3540 / 7)
    assert cost == pytest.approx(168.0)
    assert run_cost(con, "slurm:c1:601:1") == (pytest.approx(6 / 7), 0, pytest.approx(6.0), "exact")


def test_the_same_job_id_on_two_clusters_holds_only_its_own_gpus(con) -> None:
    """Job 51234 of c1 holds hpc-a's 2 GPUs for 4 h: 8 GPU-hours busy at $2 = $16; job 51234 of
    c2 holds hpc-b's: 8 GPU-hours allocated idle (2 % < 5 %) at $4 = $32. Matching the label on
    the job id alone gave each run half of all four GPUs: 4 busy + 4 idle GPU-hours, $24 each."""
    assert run_cost(con, "slurm:c1:51234:1") == (
        pytest.approx(8.0),
        0,
        pytest.approx(16.0),
        "exact",
    )
    assert run_cost(con, "slurm:c2:51234:1") == (
        0,
        pytest.approx(8.0),
        pytest.approx(32.0),
        "exact",
    )
    held = con.execute(
        "select run_id, host, sum(held_seconds) from intermediate.int_run_gpu_hour_costs "
        "where run_id like '%:51234:%' group by 1, 2 order by 1"
    ).fetchall()
    assert held == [
        ("slurm:c1:51234:1", "hpc-a", pytest.approx(2 * 4 * 3600)),
        ("slurm:c2:51234:1", "hpc-b", pytest.approx(2 * 4 * 3600)),
    ]


def test_a_label_naming_a_job_on_other_hosts_maps_nothing_and_is_named(con) -> None:
    """hpc-a GPU 1's 60 samples of 04:00-05:00 carry hpc_job="601", which runs then on mig-1
    only: 601 still holds just its slice ($6, checked above), hpc-a's GPU 1 is unallocated
    in that hour (3,600 s), and data health names the 60 samples."""
    unalloc = con.execute(
        "select unallocated_seconds from fct_gpu_hours where host = 'hpc-a' and gpu_index = 1 "
        "and hour = ?",
        [T1 + 4 * HOUR],
    ).fetchone()[0]
    assert unalloc == pytest.approx(3600.0)
    severity, count, message = con.execute(
        'select severity, count, message from fct_data_health where "check" = ? and day = ?',
        ["hpc_job_label_off_hosts:hpc-a", D1],
    ).fetchone()
    assert (severity, count) == ("warning", 60)
    assert message.startswith(
        "60 DCGM samples of hpc-a carry hpc_job labels (e.g. 601) naming Slurm jobs that ran "
        "then on other hosts only"
    )
    # the labels of each cluster's own 51234 are its evidence: no finding for them
    assert (
        con.execute(
            "select count(*) from fct_data_health where \"check\" = 'hpc_job_label_off_hosts:hpc-b'"
        ).fetchone()[0]
        == 0
    )
