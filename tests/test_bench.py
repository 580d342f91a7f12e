"""The scale benchmark (benchmarks/scale.py, `fleetledger bench`): the generator plants what it
says, the pandas baseline computes the same GPU-hours by hand, and a tiny end-to-end run finds
the baseline equal to the warehouse (its speed is not checked here).

The fleet of every test: 16 GPUs (2 nodes), 1 day, a scrape every 300 s, 6 jobs. By
scale_fleet's plan: ceil(6 / 2) = 3 slots of 28,800 s a node; a job starts 3,600 s into its slot
(1/8) and runs 14,400 / 18,000 / 21,600 s (1/2, 5/8, 3/4 of the slot) for i mod 3 = 0 / 1 / 2;
job 3 (i mod 4 = 3) idles. On 8 GPUs each:
  busy = 8 x (14,400 + 18,000 + 21,600 + 18,000 + 21,600) = 748,800 s,
  allocated idle = 8 x 14,400 = 115,200 s,
  unallocated = 16 x 86,400 - 748,800 - 115,200 = 518,400 s, down 0.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from datetime import date
from pathlib import Path

import pandas as pd
import polars as pl
import pytest

from benchmarks import scale
from benchmarks.baseline.gpu_hours import expand_hostlist, gpu_hour_states
from benchmarks.compare import Mismatch, _compare
from benchmarks.daily_stage import (
    CUR_EXPORT,
    DailyRun,
    DailyTime,
    daily_ratio,
    growth,
    node_seconds,
    redeliver_open_month,
    run_order,
    summarize,
)
from benchmarks.measure import STOP_REQUESTED
from benchmarks.pipeline_process import run_in_process
from benchmarks.scale import BenchResult, dbt_project_changed, group_steps, run_bench
from benchmarks.scale_fleet import ScaleSpec, node_day_frame, plan_jobs, planted_totals, write_fleet
from fleetledger.cli import main
from orchestration.dbt import dbt_project_dir

SPEC = ScaleSpec(gpus=16, days=1, scrape_s=300, jobs_per_day=6, start=date(2026, 10, 1))
T0 = 1790812800.0  # 2026-10-01T00:00:00Z
PLANTED = {
    "busy_seconds": 748_800.0,
    "allocated_idle_seconds": 115_200.0,
    "unallocated_seconds": 518_400.0,
    "down_seconds": 0.0,
}
# per run (GPU-hours = 8 GPUs x length / 3600): jobs 0..5 = 32, 40, 48, 32 (idle), 40, 48
RUN_GPU_HOURS = {
    "slurm:aws-hpc:500000:1": (32.0, 0.0),
    "slurm:aws-hpc:500001:1": (40.0, 0.0),
    "slurm:aws-hpc:500002:1": (48.0, 0.0),
    "slurm:aws-hpc:500003:1": (0.0, 32.0),
    "slurm:aws-hpc:500004:1": (40.0, 0.0),
    "slurm:aws-hpc:500005:1": (48.0, 0.0),
}


def test_plan_is_the_hand_computed_one() -> None:
    jobs = plan_jobs(SPEC)
    assert jobs["node"].to_list() == [0, 1, 0, 1, 0, 1]
    # slot 0 from 01:00 (3,600 s in), slot 1 from 08:00 + 1 h, slot 2 from 16:00 + 1 h
    assert (jobs["start"] - int(T0)).to_list() == [3600, 3600, 32400, 32400, 61200, 61200]
    assert (jobs["end"] - jobs["start"]).to_list() == [14400, 18000, 21600, 14400, 18000, 21600]
    assert jobs["busy"].to_list() == [True, True, True, False, True, True]
    assert planted_totals(SPEC) == PLANTED


def test_node_day_frame_labels_exactly_the_jobs_samples() -> None:
    jobs = plan_jobs(SPEC).filter(pl.col("node") == 0)
    df = node_day_frame(SPEC, "aws-p5-0001", int(T0), jobs)
    # 288 scrapes x 8 GPUs x 5 fields
    assert df.height == 288 * 8 * 5
    util = df.filter(pl.col("metric") == "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    # job 500000 holds [01:00, 05:00): 14,400 / 300 = 48 scrapes x 8 GPUs
    held = util.filter(pl.col("hpc_job") == "500000")
    assert held.height == 48 * 8
    assert held["timestamp"].min() == pd.Timestamp("2026-10-01T01:00:00Z")
    assert held["timestamp"].max() == pd.Timestamp("2026-10-01T04:55:00Z")
    # GPU g of a busy job at 0.30 + 0.05 g; nothing held at 0
    assert sorted(held["value"].unique().round(6).to_list()) == [
        round(0.30 + 0.05 * g, 6) for g in range(8)
    ]
    assert util.filter(pl.col("hpc_job").is_null())["value"].max() == 0.0


def test_baseline_finds_the_plan_from_the_files(tmp_path: Path) -> None:
    written = write_fleet(SPEC, tmp_path)
    assert (written.dcgm_rows, written.sacct_rows, written.jobs) == (2 * 288 * 8 * 5, 6, 6)
    sacct = sorted((tmp_path / "sources" / "aws" / "sacct").glob("sacct-*.txt"))
    base = gpu_hour_states(written.dcgm_files, sacct, T0, T0 + 86400, 0.05)
    # 16 GPUs x 24 hours, each hour's states summing to 3,600 s
    assert len(base.gpu_hours) == 16 * 24
    states = list(PLANTED)
    assert (base.gpu_hours[states].sum(axis=1) == 3600).all()
    assert base.gpu_hours[states].sum().to_dict() == PLANTED
    got = {
        r.run_id: (r.busy_gpu_hours, r.allocated_idle_gpu_hours)
        for r in base.run_gpu_hours.itertuples()
    }
    assert got == RUN_GPU_HOURS
    # hour 01:00 of GPU 0 of node 1: job 500001 runs from 01:00 (busy all hour); 00:00 is free
    g0 = base.gpu_hours[base.gpu_hours["gpu_uuid"] == "GPU-" + _uuid_tail("aws-p5-0002", 0)]
    by_hour = g0.set_index("hour_epoch")
    assert by_hour.loc[T0, "unallocated_seconds"] == 3600
    assert by_hour.loc[T0 + 3600, "busy_seconds"] == 3600


def _uuid_tail(host: str, index: int) -> str:
    from benchmarks.scale_fleet import gpu_uuid

    return gpu_uuid(host, index).removeprefix("GPU-")


def test_expand_hostlist() -> None:
    assert expand_hostlist("aws-p5-[0001-0003,0007],gpu9") == [
        "aws-p5-0001",
        "aws-p5-0002",
        "aws-p5-0003",
        "aws-p5-0007",
        "gpu9",
    ]
    assert expand_hostlist("aws-p5-0002") == ["aws-p5-0002"]


def test_compare_fails_loudly_on_a_difference_or_a_missing_row() -> None:
    ours = pd.DataFrame({"k": [1, 2], "v": [10.0, 20.0]})
    assert _compare(ours, ours.assign(v=[10.0, 20.0 + 5e-7]), ["k"], ("v",), "t") == pytest.approx(
        5e-7
    )
    with pytest.raises(Mismatch, match="v differs on 1 of 2 rows"):
        _compare(ours, ours.assign(v=[10.0, 20.001]), ["k"], ("v",), "t")
    with pytest.raises(Mismatch, match="1 rows on one side only"):
        _compare(ours, ours.head(1), ["k"], ("v",), "t")


def test_group_steps_sums_the_dagster_steps_into_stages() -> None:
    steps = {
        "raw__aws_dcgm": 2.0,
        "raw__aws_slurm": 1.0,
        "raw__aws_cur": 0.5,
        "raw__aws_cur_landing_expectations": 3.0,
        "raw__aws_cur_source_totals_match": 0.25,
        "raw__config_tables": 0.1,
        "dbt_warehouse": 40.0,
        "forecasts": 4.0,
        "alerts": 1.0,
        "warehouse_snapshot": 2.0,
    }
    g = group_steps(steps)
    assert g["DCGM ingest"] == 2.0
    assert g["landing checks"] == 3.25
    assert g["forecasts + alerts"] == 5.0
    assert g["other steps"] == 0.1
    assert sum(g.values()) == pytest.approx(sum(steps.values()))


def test_cli_passes_options_to_the_bench_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as e:
        main(["bench", "--gpus", "12"])
    assert e.value.code == 2
    assert "multiple of 8" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("option", "value", "says"),
    [
        ("--memory-limit", "3 gigs", "--memory-limit: '3 gigs' is not a memory size"),
        ("--threads", "0", "--threads 0: Input should be greater than or equal to 1"),
    ],
)
def test_bad_warehouse_settings_stop_the_bench_before_the_fleet_is_written(
    option: str, value: str, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "home"
    with pytest.raises(SystemExit) as e:
        main(["bench", "--gpus", "8", "--days", "1", option, value, "--out", str(out)])
    assert e.value.code == 2
    assert says in capsys.readouterr().err
    assert not out.exists()  # nothing generated


def test_sigterm_stops_the_bench_and_removes_its_temporary_home(tmp_path: Path) -> None:
    """`kill` (or a CI job's timeout) while the fleet is being written: the benchmark says it
    was stopped, exits 128 + 15 and leaves no temporary home behind (at the target, GBs)."""
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    # the target's fleet takes about 40 s to write: the signal comes while it is written
    cmd = [sys.executable, "-m", "benchmarks.scale", "--stages", "lower_bound"]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("fleetledger-bench-*/sources")):
            assert proc.poll() is None, proc.stdout.read().decode() if proc.stdout else ""
            assert time.monotonic() < deadline, "the benchmark never started writing its fleet"
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        # at once, not after the rest of the fleet (about 40 s): a signal that lands inside a
        # polars write stops the writer at its next file (the next test)
        out, _ = proc.communicate(timeout=20)
    finally:
        proc.kill()
    assert proc.returncode == 128 + signal.SIGTERM
    assert "stopped by SIGTERM; the home was removed" in out.decode()
    assert list(tmp_path.iterdir()) == []


def test_a_stop_that_surfaces_as_another_error_is_still_the_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A SIGTERM inside a DuckDB query: the handler sets the stop request and raises its exit,
    but DuckDB interrupts the query and raises its own error in its place (`RuntimeError:
    Query interrupted`, seen by hand). Still the stop: exit 128 + 15, the temporary home
    removed, no "failed". (A real signal here would depend on when DuckDB looks for one,
    seconds late on a busy machine.)"""

    def a_stage_in_a_query(*_args: object, **_kwargs: object) -> None:
        STOP_REQUESTED.set()  # what the handler does first
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr(scale, "run_bench", a_stage_in_a_query)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    try:
        code = scale.main(["--gpus", "8", "--days", "1", "--stages", "lower_bound"])
    finally:
        STOP_REQUESTED.clear()
    out = capsys.readouterr().out
    assert code == 128 + signal.SIGTERM
    assert "stopped by SIGTERM; the home was removed" in out and "failed" not in out
    assert list(tmp_path.iterdir()) == []


def test_a_stop_requested_while_a_file_is_written_stops_the_fleet_at_the_next(
    tmp_path: Path,
) -> None:
    """The SIGTERM handler's exception is lost when it fires inside a polars write (the
    writer went on to the end of the fleet); the request it leaves stops the next file."""
    STOP_REQUESTED.set()
    try:
        with pytest.raises(SystemExit) as e:
            run_bench(SPEC, tmp_path / "home", ("lower_bound",))
    finally:
        STOP_REQUESTED.clear()
    assert e.value.code == 128 + signal.SIGTERM
    assert len(list((tmp_path / "home").rglob("*.parquet"))) <= 1


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> BenchResult:
    """The bench end to end on the tiny fleet (one pipeline run: ~1.5 min on 2 idle cores)."""
    return run_bench(
        SPEC, tmp_path_factory.mktemp("bench"), ("pipeline", "baseline", "lower_bound")
    )


@pytest.mark.warehouse
def test_bench_baseline_agrees_with_the_warehouse(bench: BenchResult) -> None:
    c = bench.checks["baseline"]
    assert (c["gpu_hour_rows"], c["run_rows"]) == (16 * 24, 6)
    assert c["max_abs_diff_seconds"] <= 1e-6 and c["max_abs_diff_gpu_hours"] <= 1e-6
    assert bench.checks["planted"] == PLANTED


@pytest.mark.warehouse
def test_bench_reports_every_stage(bench: BenchResult) -> None:
    names = [s.name for s in bench.stages]
    for stage in (
        "generate",
        "DCGM ingest",
        "scheduler ingest",
        "billing ingest",
        "landing checks",
        "dbt build",
        "forecasts + alerts",
        "publish",
        "pipeline, whole run",
        "pipeline GPU-hour stage",
        "pandas baseline",
        "DuckDB scan (lower bound)",
    ):
        assert stage in names, stage
    # input rows: 2 nodes x 288 scrapes x 8 GPUs x 5 fields; 6 sacct lines; CUR: 24 h x (2
    # Savings Plan nodes x 2 lines + the plan's fee) + 1 S3 line = 121
    assert bench.stage("DCGM ingest").rows == 23_040
    assert bench.stage("scheduler ingest").rows == 6
    assert bench.stage("billing ingest").rows == 121
    # the lower bound scans one field: 2 x 288 x 8 samples
    assert bench.stage("DuckDB scan (lower bound)").rows == 4_608
    assert bench.stage("dbt build").seconds > 0
    whole = bench.stage("pipeline, whole run")
    assert whole.peak_rss is not None and whole.peak_rss > 100 * 2**20
    assert whole.cpu_seconds is not None and whole.cpu_seconds > 0
    assert set(bench.ratios) == {
        "speed-up over the pandas baseline",
        "x the DuckDB scan lower bound",
    }


def test_the_bench_parses_a_changed_dbt_project_before_the_timed_run(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project whose manifest is missing or older than a file of it is parsed before the
    run (the benchmark's own row, not in the run); a current one is left alone. On a copy of
    the project, so that the suite's other processes keep theirs."""
    project = tmp_path / "dbt_project"
    shutil.copytree(dbt_project_dir(), project, ignore=shutil.ignore_patterns("target", "logs"))
    monkeypatch.setenv("FLEETLEDGER_DBT_PROJECT_DIR", str(project))
    assert dbt_project_changed(tmp_path / "home") is True  # no manifest yet
    manifest = project / "target" / "manifest.json"
    assert manifest.is_file()
    assert dbt_project_changed(tmp_path / "home") is False
    os.utime(project / "models" / "marts" / "fct_gpu_hours.sql")  # an edit
    assert dbt_project_changed(tmp_path / "home") is True


def test_ingest_stage_lands_the_sources_and_validates_the_dcgm_days(tmp_path: Path) -> None:
    """`--stages ingest`: no Dagster, no dbt; each step timed with its input rows."""
    bench = run_bench(SPEC, tmp_path / "home", ("ingest",))
    stages = {s.name: s for s in bench.stages}
    # as test_bench_reports_every_stage: 2 nodes x 288 scrapes x 8 GPUs x 5 fields, 6 sacct
    # lines, 121 CUR lines; every row lands (the plan writes no bad row)
    assert stages["ingest: DCGM"].rows == 23_040
    assert stages["ingest: DCGM"].note == "23,040 rows landed"
    assert stages["ingest: scheduler (sacct)"].note == "6 rows landed"
    assert stages["ingest: billing (CUR)"].note == "121 rows landed"
    # the one landed day passes its 46 expectations
    check = stages["ingest: DCGM landing suite"]
    assert (check.rows, check.note) == (23_040, "46 expectations x 1 days")
    assert all(s.cpu_seconds is not None and s.peak_rss for s in stages.values())
    assert "dbt build" not in stages


def test_redelivery_gives_the_open_month_a_new_execution_id(tmp_path: Path) -> None:
    """The daily stage's CUR redelivery: 2026-10-30 .. 2026-11-01 spans two billing periods;
    only November's (the open month) manifest gets the new execution id."""
    spec = ScaleSpec(gpus=8, days=3, scrape_s=600, start=date(2026, 10, 30))
    write_fleet(spec, tmp_path)
    root = tmp_path / CUR_EXPORT / "metadata"
    before = {p.parent.name: json.loads(p.read_text()) for p in root.rglob("*Manifest.json")}
    assert sorted(before) == ["BILLING_PERIOD=2026-10", "BILLING_PERIOD=2026-11"]
    manifest = redeliver_open_month(tmp_path, "0090")
    assert manifest.parent.name == "BILLING_PERIOD=2026-11"
    after = {p.parent.name: json.loads(p.read_text()) for p in root.rglob("*Manifest.json")}
    assert after["BILLING_PERIOD=2026-10"] == before["BILLING_PERIOD=2026-10"]
    new, old = (d["BILLING_PERIOD=2026-11"]["executionId"] for d in (after, before))
    assert new != old and new.endswith("0090") and new[:-4] == old[:-4]


def test_daily_ratio_is_the_longest_history_over_the_shortest() -> None:
    def t(days: int, seconds: float) -> DailyTime:
        return DailyTime(days, 0.0, 0.0, seconds, 0.0, 0.0, 0, None)

    # 90 days: 50 s, 7 days: 40 s -> 1.25; one history alone has no ratio
    assert daily_ratio([t(90, 50.0), t(7, 40.0)]) == pytest.approx(1.25)
    assert daily_ratio([t(7, 40.0)]) is None


def test_a_run_in_its_own_process_that_fails_says_where_and_why(tmp_path: Path) -> None:
    # the daily stage runs each pipeline in a child process (benchmarks/pipeline_process.py):
    # a failure there surfaces with the home, the days and the child's own error
    (tmp_path / "fleetledger.yml").write_text("teams: [unclosed\n")
    with pytest.raises(RuntimeError) as err:
        run_in_process(tmp_path, date(2026, 1, 5), date(2026, 1, 6))
    text = str(err.value)
    assert f"over 2026-01-05..2026-01-06 in {tmp_path} failed (exit 1)" in text
    assert f"ConfigError: {tmp_path / 'fleetledger.yml'}: not valid YAML" in text


def test_daily_runs_take_turns_and_each_history_reports_their_median(tmp_path: Path) -> None:
    # two histories, three rounds: 7 then 90, 90 then 7, 7 then 90
    assert run_order([7, 90], 3) == [(7, 0), (90, 0), (90, 1), (7, 1), (7, 2), (90, 2)]
    assert run_order([7], 2) == [(7, 0), (7, 1)]

    def run(seconds: float, rss: int, refresh: str | None = None) -> DailyRun:
        return DailyRun(seconds, seconds + 10, seconds / 2, 0.5, rss, refresh)

    # 44, 52, 41 s: the median is 44 (not the mean, 45.67); the highest peak RSS; the one
    # full-refresh reason
    got = summarize(
        90, [300.0, 400.0], [run(44.0, 3), run(52.0, 9, "config"), run(41.0, 5)], tmp_path
    )
    assert (got.history_days, got.history_seconds, got.history_cpu_seconds) == (90, 300.0, 400.0)
    assert got.daily_seconds == 44.0 and got.daily_runs_seconds == (44.0, 52.0, 41.0)
    assert (got.daily_cpu_seconds, got.daily_dbt_seconds) == (54.0, 22.0)
    assert (got.daily_peak_rss, got.full_refresh) == (9, "config")
    assert (got.published_bytes, got.history_bytes) == (0, 0)  # no warehouse in tmp_path
    with pytest.raises(ValueError, match="history of 7 days: no daily run"):
        summarize(7, [1.0, 1.0], [], tmp_path)


def test_the_daily_stage_names_the_dbt_nodes_that_grew_most(tmp_path: Path) -> None:
    def run(seconds: float, nodes: dict[str, float]) -> DailyRun:
        return DailyRun(seconds, seconds, 1.0, 0.1, 1, None, nodes)

    a, b, c = "model.fleetledger.int_a", "model.fleetledger.int_b", "test.fleetledger.t_c"
    # after 7 days: a 1.0 / 1.2 / 1.1 s (median 1.1), b 2.0 in each run; c in one run only
    short = summarize(
        7,
        [1.0, 1.0],
        [run(30, {a: 1.0, b: 2.0}), run(31, {a: 1.2, b: 2.0, c: 0.5}), run(32, {a: 1.1, b: 2.0})],
        tmp_path,
    )
    assert short.node_seconds == {a: 1.1, b: 2.0, c: 0.5}
    # after 90 days: a 1.5, b 1.9 (shrank), c 0.8, and a node the shorter runs lack
    d = "model.fleetledger.int_d"
    long = summarize(90, [1.0, 1.0], [run(33, {a: 1.5, b: 1.9, c: 0.8, d: 0.05})], tmp_path)
    grew = growth([long, short], top=2)
    assert grew is not None
    assert (grew.shortest_days, grew.longest_days) == (7, 90)
    assert grew.shortest_total == pytest.approx(1.1 + 2.0 + 0.5)
    assert grew.longest_total == pytest.approx(1.5 + 1.9 + 0.8 + 0.05)
    # the two that grew most: a (+0.4) then c (+0.3); b shrank
    assert [g[0] for g in grew.grown] == [a, c]
    assert grew.grown[0][1:] == pytest.approx((1.1, 1.5))
    # the top 5: d too (+0.05, from nothing), never b
    assert [g[0] for g in growth([short, long]).grown] == [a, c, d]
    assert growth([short]) is None


def test_a_daily_run_without_dbt_results_is_an_error_not_zero_seconds(tmp_path: Path) -> None:
    # the growth report compares each node's seconds between histories: a run whose
    # run_results.json is missing would read as every node taking 0 s
    with pytest.raises(FileNotFoundError, match="run r1 of .*: no dbt run_results.json in"):
        node_seconds(tmp_path, "r1")
    results = tmp_path / "build" / "dbt" / "r1"
    results.mkdir(parents=True)
    nodes = [{"unique_id": "model.fleetledger.int_a", "execution_time": 1.25}]
    (results / "run_results.json").write_text(json.dumps({"results": nodes}))
    assert node_seconds(tmp_path, "r1") == {"model.fleetledger.int_a": 1.25}
