"""Day batches (docs/operations.md, "Incremental runs"): a full build runs the sample-grain day
models one day at a time (dbt_project/macros/day_batches.sql) and must give the rows a build in
one statement gives, the samples outside the accounted days included. A hand-made fleet, each
figure worked out here.

Three accounted days, 2026-11-20..22 (D1..D3); `n-1` (1 GPU, on-prem), DCGM every 300 s from
00:02 each day, utilisation 10, 20 and 30 % on D1, D2, D3 (an idle GPU: no job). Two samples
lie outside the accounted days, in the first and the last day's files (ingest lands a sample
within an hour of its file's day): 23:52:30 and 23:57:30 the day before D1 (a day of two
samples 300 s apart: each stays valid 600 s, so the second covers D1's first two minutes, to the
next sample at 00:02) and 00:01:40 the day after D3. 3 x 288 + 3 = 867 samples.

Built three times from the same landing zone: a day at a time and in two batches (D1-D2, D3) as
the pipeline passes them (FLEETLEDGER_DAY_BATCHES: the first day of each), and in one statement
per model (dbt by hand).
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
from edge_rows import built_rows, dcgm, every, frame
from mart_compare import compare_marts, read_marts

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import land, write_schema_files

DAYS = [date(2026, 11, 20), date(2026, 11, 21), date(2026, 11, 22)]
T1 = datetime(2026, 11, 20, tzinfo=UTC)
DAY = timedelta(days=1)
UTIL = "DCGM_FI_DEV_GPU_UTIL"
BEFORE = T1 - timedelta(seconds=450)  # 23:52:30 the day before D1, then 23:57:30
AFTER = T1 + 3 * DAY + timedelta(seconds=100)  # 00:01:40 the day after D3
BATCHED_MODELS = (
    "int_gpu_samples",
    "int_gpu_sample_labels",
    "int_gpu_series_cadence",
    "int_gpu_last_samples",
    "int_sample_pieces",
    "int_gpu_coverage_spans",
    "int_health_gpu_samples",
    "int_health_straggler_buckets",
    "int_health_straggler_pieces",
)


def _land(home: Path) -> None:
    node = {"provider": "onprem", "site": "lab", "gpu_model": "H100", "cluster": "c1"}
    write_schema_files(home)
    write_config_tables(Config(inventory=[{"host": "n-1", "gpus": 1, **node}]), home)
    record_accounted_days(home, DAYS)
    for i, day in enumerate(DAYS):
        start = T1 + i * DAY + timedelta(minutes=2)
        rows = [dcgm("n-1", 0, t, UTIL, 10.0 * (i + 1)) for t in every(start, start + DAY, 300)]
        if i == 0:
            rows[:0] = [
                dcgm("n-1", 0, t, UTIL, 10.0) for t in (BEFORE, BEFORE + timedelta(seconds=300))
            ]
        if i == len(DAYS) - 1:
            rows.append(dcgm("n-1", 0, AFTER, UTIL, 30.0))
        land(home, "dcgm_samples", "dcgm", f"date={day}", frame("dcgm_samples", rows))
        land(home, "slurm_jobs", "slurm", f"date={day}", frame("slurm_jobs", []))


def _compiled(home: Path, model: str) -> str:
    (path,) = (home / "dbt_target" / "compiled").rglob(f"{model}.sql")
    return path.read_text()


BATCHINGS = {"days": DAYS, "two": [DAYS[0], DAYS[2]]}


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    out: dict[str, Any] = {}
    whole = tmp_path_factory.mktemp("one_statement")
    _land(whole)
    dbt_build(whole, "fleetledger", run_id="full")
    out["whole"] = whole
    out["whole_marts"] = read_marts(whole / "build/warehouse.duckdb", whole, run_id="full")
    for name, starts in BATCHINGS.items():
        home = tmp_path_factory.mktemp(f"batches_{name}")
        shutil.copytree(whole / "raw", home / "raw")
        env = {"FLEETLEDGER_DAY_BATCHES": ",".join(str(d) for d in starts)}
        dbt_build(home, "fleetledger", run_id="full", env=env)
        out[name] = home
        out[f"{name}_marts"] = read_marts(home / "build/warehouse.duckdb", home, run_id="full")
    yield out


@pytest.mark.parametrize("batching", BATCHINGS)
def test_a_batched_build_runs_each_model_per_batch_and_the_other_in_one_statement(
    homes, batching: str
) -> None:
    for model in BATCHED_MODELS:
        assert "getvariable('fleetledger_day_from')" in _compiled(homes[batching], model), model
        assert "getvariable" not in _compiled(homes["whole"], model), model
    # a day model that is not batched runs once either way
    assert "getvariable" not in _compiled(homes[batching], "int_gpu_hour_reports")


@pytest.mark.parametrize("batching", BATCHINGS)
def test_the_samples_outside_the_accounted_days_are_built(homes, batching: str) -> None:
    # 3 days x 288 scrapes, the two before D1 and the one after D3
    sql = (
        "select count(*), min(t), max(t) from history.intermediate.int_gpu_samples "
        "where gpu_uuid is not null"
    )
    assert built_rows(homes[batching], sql) == [(867, BEFORE.timestamp(), AFTER.timestamp())]
    # the last sample before D1 covers D1 from midnight to its first sample at 00:02, and D1's
    # last (23:57) to midnight: D1 has 86,400 covered seconds
    d1 = int(T1.timestamp())
    covered = (
        "select sum(piece_end - piece_start) from history.intermediate.int_sample_pieces "
        f"where day_epoch = {d1}"
    )
    assert built_rows(homes[batching], covered) == [(86400.0,)]


@pytest.mark.parametrize("batching", BATCHINGS)
@pytest.mark.parametrize("model", BATCHED_MODELS)
def test_each_batched_model_holds_the_rows_of_one_statement(
    homes, batching: str, model: str
) -> None:
    con = duckdb.connect()
    try:
        for name, home in (("b", homes[batching]), ("w", homes["whole"])):
            con.execute(f"attach '{home / 'build/history.duckdb'}' as {name} (read_only)")
        counts = con.execute(
            f"select (select count(*) from b.intermediate.{model}), "
            f"(select count(*) from w.intermediate.{model}), "
            f"(select count(*) from (select * from b.intermediate.{model} "
            f"except all select * from w.intermediate.{model})), "
            f"(select count(*) from (select * from w.intermediate.{model} "
            f"except all select * from b.intermediate.{model}))"
        ).fetchone()
    finally:
        con.close()
    assert counts is not None and counts[0] == counts[1] and counts[2:] == (0, 0), counts


@pytest.mark.parametrize("batching", BATCHINGS)
def test_the_marts_are_those_of_one_statement(homes, batching: str) -> None:
    problems, _ = compare_marts(homes[f"{batching}_marts"], homes["whole_marts"])
    assert not problems, "\n".join(problems)
