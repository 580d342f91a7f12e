"""A recomputed day that now has no rows (docs/operations.md, "Incremental runs"): a run that
recomputes a day must drop that day's old rows even when the day's new rows are none, in every
model stored by day; a hand-made fleet, every figure worked out here by hand.

Two accounted days, 2026-11-20 (D1) and 2026-11-21 (D2), DCGM every 300 s, no bill.
- `n-1` (1 GPU, on-prem) reports both days, 0 % on D1.
- As first delivered, D2 also holds Slurm job 901 on `n-1`'s GPU 00:00-06:00 (samples labelled
  hpc_job="901" at 90 %, 0 % after) and the samples of `x-9`, a host outside the inventory.
- Then D2 is corrected: job 901 was a record of another cluster (sacct delivered again without
  it), `x-9`'s exporter was pointed at this Prometheus by mistake (its samples dropped), so
  `n-1`'s GPU is at 0 % all day, no run holds it.

Built in full as first delivered, then D2 corrected and recomputed alone (as `fleetledger run
--date D2` does): D2 has no run hour and no host outside the inventory any more, so the day
models `int_run_gpu_hours` and `int_dcgm_outside_host_days` compute no row for it. Their old D2
rows must go: left in place, job 901's six hours would still be busy GPU time (`fct_gpu_hours`)
and `x-9` would still be named outside the inventory. The result must equal a full build of
the corrected data, mart by mart.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from edge_rows import built_rows, dcgm, every, frame, one_node_home, slurm_job
from mart_compare import compare_marts, read_marts

from ingest.core.landing import land

D1, D2 = date(2026, 11, 20), date(2026, 11, 21)
T1 = datetime(2026, 11, 20, tzinfo=UTC)
T2 = T1 + timedelta(days=1)
HOUR = timedelta(hours=1)
UTIL = "DCGM_FI_DEV_GPU_UTIL"


def _land_day_1(home: Path) -> None:
    one_node_home(
        home,
        gpus=1,
        teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
        days=[D1, D2],
    )
    rows = [dcgm("n-1", 0, t, UTIL, 0.0) for t in every(T1, T2, 300)]
    land(home, "dcgm_samples", "dcgm", f"date={D1}", frame("dcgm_samples", rows))
    land(home, "slurm_jobs", "slurm", f"date={D1}", frame("slurm_jobs", []))


def _land_day_2(home: Path, corrected: bool) -> None:
    """D2's DCGM and sacct partitions, replaced whole (as ingest lands a day again)."""
    rows: list[dict[str, Any]] = []
    for t in every(T2, T2 + 24 * HOUR, 300):
        held = not corrected and t < T2 + 6 * HOUR
        sample = dcgm("n-1", 0, t, UTIL, 90.0 if held else 0.0)
        rows.append(sample | ({"hpc_job": "901"} if held else {}))
        if not corrected:
            rows.append(dcgm("x-9", 0, t, UTIL, 50.0))
    land(home, "dcgm_samples", "dcgm", f"date={D2}", frame("dcgm_samples", rows))
    jobs = [] if corrected else [slurm_job("901", "n-1", 1, T2, T2 + 6 * HOUR)]
    land(home, "slurm_jobs", "slurm", f"date={D2}", frame("slurm_jobs", jobs))


D2_EPOCH = int(T2.timestamp())
OUTSIDE = (
    "select count(*) from history.intermediate.int_dcgm_outside_host_days "
    f"where day_epoch = {D2_EPOCH}"
)
RUN_HOURS = (
    f"select count(*) from history.intermediate.int_run_gpu_hours where day_epoch = {D2_EPOCH}"
)
BUSY = f"select sum(busy_seconds) from main.fct_gpu_hours where day_epoch = {D2_EPOCH}"
# a column of each copy of the inputs the one-row models compare with (int_*_recompute_from)
COPIED_COLUMNS = (
    ("int_gpu_unit_inputs", "first_report_hour"),
    ("int_gpu_hour_state_inputs", "energy_kwh"),
    ("int_node_hour_cost_inputs", "energy_kwh"),
    ("int_spend_line_inputs", "cost"),
    ("int_spend_run_inputs", "kind"),
    ("int_billing_line_inputs", "other_amount"),
    ("int_run_allocation_inputs", "ended_epoch"),
    ("int_inference_run_inputs", "ended_epoch"),
    ("int_fleet_health_inputs", "other_amount"),
    ("int_ops_daily_inputs", "started_amount"),
)
REASONS = " union all ".join(
    f"select '{name}', reason from intermediate.int_{name}_recompute_from"
    for name in (
        "gpu_units",
        "gpu_hour_states",
        "node_hour_costs",
        "spend",
        "billing_lines",
        "team_days",
        "inference",
        "fleet_health",
        "ops_daily",
    )
)


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    daily = tmp_path_factory.mktemp("empty_day_daily")
    _land_day_1(daily)
    _land_day_2(daily, corrected=False)
    dbt_build(daily, "fleetledger", run_id="first")
    out: dict[str, Any] = {"daily": daily}
    out["before"] = {q: built_rows(daily, q)[0][0] for q in (OUTSIDE, RUN_HOURS, BUSY)}
    _land_day_2(daily, corrected=True)
    env = {"FLEETLEDGER_RECOMPUTE_START": str(D2), "FLEETLEDGER_RECOMPUTE_END": str(D2)}
    dbt_build(daily, "fleetledger", run_id="corrected", env=env)
    full = tmp_path_factory.mktemp("empty_day_full")
    shutil.copytree(daily / "raw", full / "raw")
    dbt_build(full, "fleetledger", run_id="corrected")
    out["full"] = full
    out["daily_marts"] = read_marts(daily / "build/warehouse.duckdb", daily, run_id="corrected")
    out["full_marts"] = read_marts(full / "build/warehouse.duckdb", full, run_id="corrected")
    # an upgrade: the input copies an older version left have other columns; the upgrade's
    # first build is a full one (the dbt project changed), which must not compare with them
    con = duckdb.connect(str(daily / "build/warehouse.duckdb"))
    try:
        for table, column in COPIED_COLUMNS:
            con.execute(f"alter table intermediate.{table} drop column {column}")
    finally:
        con.close()
    dbt_build(daily, "fleetledger", run_id="upgraded", full_refresh=True)
    out["upgraded_reasons"] = built_rows(daily, REASONS)
    out["upgraded_marts"] = read_marts(daily / "build/warehouse.duckdb", daily, run_id="upgraded")
    yield out


def test_as_first_delivered_day_2_had_a_run_and_a_host_outside_the_inventory(homes) -> None:
    before = homes["before"]
    # x-9 on D2; job 901's hours 00:00-06:00 on n-1's GPU; its 6 h at 90 % busy
    assert before[OUTSIDE] == 1
    assert before[RUN_HOURS] == 6
    assert before[BUSY] == pytest.approx(6 * 3600)


def test_the_corrected_day_keeps_none_of_its_old_rows(homes) -> None:
    daily = homes["daily"]
    assert built_rows(daily, OUTSIDE)[0][0] == 0
    assert built_rows(daily, RUN_HOURS)[0][0] == 0
    # no run holds the GPU on D2 any more: nothing busy
    assert built_rows(daily, BUSY)[0][0] == pytest.approx(0.0)


def test_the_recomputed_history_equals_a_full_build_mart_by_mart(homes) -> None:
    problems, _ = compare_marts(homes["daily_marts"], homes["full_marts"])
    assert not problems, "\n".join(problems)


def test_an_upgrade_rebuilds_in_full_whatever_columns_the_old_copies_had(homes) -> None:
    # the one-row models that choose where the models stored by day start say 'full build'
    # (they compared nothing), and the marts are the full build's
    assert sorted(homes["upgraded_reasons"]) == [
        ("billing_lines", "full build"),
        ("fleet_health", "full build"),
        ("gpu_hour_states", "full build"),
        ("gpu_units", "full build"),
        ("inference", "full build"),
        ("node_hour_costs", "full build"),
        ("ops_daily", "full build"),
        ("spend", "full build"),
        ("team_days", "full build"),
    ]
    problems, _ = compare_marts(homes["upgraded_marts"], homes["full_marts"])
    assert not problems, "\n".join(problems)
