"""With and without `hpc_job` labels on the AWS Slurm site (issue #5).

Without labels, partial-node runs are mapped `estimated` (k/n of each node GPU, classified by
the node's mean utilisation). Each run's GPU-hours and cost, and each node-day's unallocated and
down hours, must agree exactly with the labelled run; only the busy / allocated-idle split may
differ, and this test prints by how much (see docs/metrics.md, "Run to GPU mapping").
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import pytest
from fleet_params import FLEET_DAYS, FLEET_START, generate_unlabelled_fleet

from fleetledger.pipeline import run_pipeline


def _q(home: Path, sql: str) -> list[tuple]:
    con = duckdb.connect(str(home / "warehouse.duckdb"), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


RUNS = """
    select r.run_id, r.gpu_hours, c.cost, c.busy_gpu_hours, c.allocated_idle_gpu_hours, c.mapping
    from fct_runs r join fct_run_costs c using (run_id)
"""
NODE_DAYS = """
    select host, cast(cast(hour as date) as varchar),
           sum(unallocated_seconds), sum(down_seconds), sum(busy_seconds + allocated_idle_seconds)
    from fct_gpu_hours group by 1, 2
"""


def test_runs_and_node_days_agree_without_labels(
    pipeline_home: Path, unlabelled_pipeline_home: Path
):
    labelled = {r[0]: r for r in _q(pipeline_home, RUNS)}
    unlabelled = {r[0]: r for r in _q(unlabelled_pipeline_home, RUNS)}
    assert set(labelled) == set(unlabelled)
    estimated = [k for k, r in unlabelled.items() if r[5] == "estimated"]
    assert len(estimated) >= 10, "partial-node AWS runs become estimated without labels"
    assert all(labelled[k][5] == "exact" for k in estimated)
    split_diff = 0.0
    for run_id, a in labelled.items():
        b = unlabelled[run_id]
        assert abs(a[1] - b[1]) < 1e-9, run_id  # GPU-hours: the scheduler's allocation
        assert abs(a[2] - b[2]) <= 0.01, run_id  # cost
        assert abs((a[3] + a[4]) - (b[3] + b[4])) <= 1 / 3600, run_id  # held GPU-hours
        split_diff += abs(a[4] - b[4])
    nodes_a = {(r[0], r[1]): r[2:] for r in _q(pipeline_home, NODE_DAYS)}
    nodes_b = {(r[0], r[1]): r[2:] for r in _q(unlabelled_pipeline_home, NODE_DAYS)}
    assert set(nodes_a) == set(nodes_b)
    for key, a in nodes_a.items():
        b = nodes_b[key]
        assert abs(a[0] - b[0]) <= 0.01, key  # unallocated seconds
        assert abs(a[1] - b[1]) <= 0.01, key  # down seconds
        assert abs(a[2] - b[2]) <= 0.01, key  # held seconds
    total_idle = sum(r[4] for r in labelled.values())
    print(
        f"\nestimated mapping moved {split_diff:.2f} GPU-hours between busy and allocated-idle "
        f"over {len(estimated)} runs (labelled allocated-idle total {total_idle:.2f} GPU-hours)"
    )
    assert split_diff > 0, "the estimated split should differ somewhere on this fleet"


RUN_HOURS = """
    select run_id, gpu_uuid, mig_instance, cast(hour as varchar), mapping, held_seconds,
           busy_seconds, allocated_idle_seconds, down_seconds, unobserved_seconds, cost
    from fct_run_gpu_hours
"""


def test_estimated_runs_built_day_by_day_equal_one_build(
    unlabelled_pipeline_home: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The node mean of an `estimated` run's piece is read at its sample's scrape, which for
    the first piece of a day can be the day before's last (int_run_gpu_hours): the same fleet
    without labels built one day at a time (each run recomputing its own day) must give every
    run-hour the one build gives."""
    home = tmp_path_factory.mktemp("unlabelled_daily")
    generate_unlabelled_fleet(home)
    for offset in range(FLEET_DAYS):
        day = FLEET_START + timedelta(days=offset)
        run_pipeline(home, day, day)
    one = {r[:4]: r[4:] for r in _q(unlabelled_pipeline_home, RUN_HOURS)}
    daily = {r[:4]: r[4:] for r in _q(home, RUN_HOURS)}
    assert set(daily) == set(one)
    assert sum(1 for r in one.values() if r[0] == "estimated") >= 1000
    for key, a in one.items():
        b = daily[key]
        assert b[0] == a[0], key  # the mapping
        assert b[1:6] == a[1:6], key  # held, busy, idle, down, unobserved seconds: exact
        assert abs(b[6] - a[6]) <= 1e-9 * max(1.0, abs(a[6])), key  # cost: a float sum
