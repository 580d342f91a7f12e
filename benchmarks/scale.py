"""Scale benchmark: generate a fleet, run the whole pipeline over it, time it stage by stage,
and compare its GPU-hour stage with two references on the same files.

    python -m benchmarks.scale [--gpus 1024] [--days 7] [--scrape-interval 30]
        [--jobs-per-day N] [--out HOME] [--keep] [--stages pipeline,baseline,lower_bound]
    fleetledger bench [same options]        make bench [BENCH_ARGS="..."]

Stages (`--stages`, comma-separated; the fleet is always generated, and timed apart):
- `pipeline`: `fleetledger.pipeline.run_pipeline` over the days; seconds per Dagster step from
  the run's event log (DCGM ingest, scheduler ingest, billing ingest, landing checks, dbt
  build, forecasts + alerts, publish), the dbt models upstream of `fct_gpu_hours` from dbt's
  run_results.json;
- `baseline`: benchmarks/baseline/gpu_hours.py (pandas) on the same source files; its GPU-hour
  states and per-run GPU-hours must equal the warehouse's within 1e-6 (else exit status 1);
- `lower_bound`: benchmarks/baseline/duckdb_scan.py, one DuckDB scan and group-by of the same
  Parquet;
- `dcgm_parse`: benchmarks/dcgm_parse.py, the DCGM text parser (`--dcgm-samples` samples);
- `ingest` (without `pipeline`): benchmarks/ingest_stage.py, the three sources landed and the
  DCGM landing suite run in this process, no Dagster or dbt, each with its peak RSS;
- `daily`: benchmarks/daily_stage.py, for each `--history-days` (7,90) a fleet of this size
  built over that history, then `--daily-runs` (3) daily runs of the next days, each after an
  open-month CUR redelivery, timed, the homes taking turns; the ratio of the longest
  history's median daily run to the shortest's.
Peak RSS is that of this process and all its descendants, sampled every 0.2 s per stage.
See docs/performance.md.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import ValidationError
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from benchmarks.baseline.duckdb_scan import scan_gpu_hours
from benchmarks.baseline.gpu_hours import gpu_hour_states
from benchmarks.compare import Mismatch, check_baseline, check_planted
from benchmarks.daily_stage import DailyTime, daily_ratio, growth, run_daily_stage
from benchmarks.dcgm_parse import main as dcgm_main
from benchmarks.ingest_stage import run_ingest_stage
from benchmarks.measure import (
    STOP_REQUESTED,
    PeakRss,
    dbt_model_seconds,
    model_ancestors,
    step_seconds,
    stop_point,
    stopwatch,
)
from benchmarks.scale_fleet import IDLE_THRESHOLD, ScaleSpec, Written, planted_totals, write_fleet
from fleetledger.config_warehouse import DEFAULT_MEMORY_LIMIT, WarehouseSettings
from fleetledger.pipeline import run_pipeline

STAGES = ("pipeline", "baseline", "lower_bound", "dcgm_parse", "ingest", "daily")
DEFAULT_STAGES = ("pipeline", "baseline", "lower_bound")
#: benchmark stage → the Dagster step keys it sums (the rest is "other steps")
STEP_STAGES = {
    "DCGM ingest": ("raw__aws_dcgm",),
    "scheduler ingest": ("raw__aws_slurm",),
    "billing ingest": ("raw__aws_cur",),
    "dbt build": ("dbt_warehouse",),
    "forecasts + alerts": ("forecasts", "alerts"),
    "publish": ("warehouse_snapshot",),
}
LANDING_CHECKS = "landing checks"
GPU_HOUR_MART = "fct_gpu_hours"


@dataclass
class StageTime:
    name: str
    seconds: float
    rows: int | None = None
    peak_rss: int | None = None
    note: str = ""
    cpu_seconds: float | None = None


@dataclass
class BenchResult:
    spec: ScaleSpec
    home: Path
    written: Written | None
    stages: list[StageTime] = field(default_factory=list)
    daily: list[DailyTime] = field(default_factory=list)
    checks: dict[str, Any] = field(default_factory=dict)
    ratios: dict[str, float] = field(default_factory=dict)

    def stage(self, name: str) -> StageTime:
        return next(s for s in self.stages if s.name == name)


def _gib(n: int | None) -> str:
    return "" if not n else f"{n / 2**30:.2f}"


#: run in a child process, so that the benchmark's own process imports nothing the run would
_PARSE_IF_CHANGED = "from orchestration.dbt import parse_if_changed\nprint(int(parse_if_changed()))"


def dbt_project_changed(home: Path) -> bool:
    """Parse the dbt project, in a child process, when its manifest is older than a file of
    it (as loading the pipeline's definitions would); whether it was."""
    env = {**os.environ, "FLEETLEDGER_HOME": str(home)}
    done = subprocess.run(
        [sys.executable, "-c", _PARSE_IF_CHANGED], env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise RuntimeError(f"dbt parse failed: {done.stderr.strip()[-2000:]}")
    return done.stdout.strip().splitlines()[-1] == "1"


def group_steps(steps: dict[str, float]) -> dict[str, float]:
    """Dagster step seconds → benchmark stages: the sources' asset-check steps
    (`raw__<source>_landing_expectations`, `raw__<source>_source_totals_*`) are `landing
    checks`, any step not named in STEP_STAGES (the config tables) `other steps`."""
    out = {name: 0.0 for name in [*STEP_STAGES, LANDING_CHECKS, "other steps"]}
    for step, seconds in steps.items():
        name = next((n for n, keys in STEP_STAGES.items() if step in keys), None)
        if name is None:
            checks = ("_landing_expectations", "_source_totals", "_check")
            name = LANDING_CHECKS if any(c in step for c in checks) else "other steps"
        out[name] += seconds
    return out


def run_bench(
    spec: ScaleSpec,
    home: Path,
    stages: Sequence[str] = DEFAULT_STAGES,
    console: Console | None = None,
    dcgm_samples: int = 3_000_000,
    history_days: Sequence[int] = (7, 90),
    daily_runs: int = 3,
) -> BenchResult:
    """Generate the fleet into `home` and run the stages; raises `Mismatch` when the
    baseline or the plan disagrees with the warehouse."""
    say = console or Console(quiet=True)
    home.mkdir(parents=True, exist_ok=True)
    if set(stages) == {"daily"}:  # its fleets are its own
        result = BenchResult(spec=spec, home=home, written=None)
        result.daily = run_daily_stage(spec, home, history_days, say.print, daily_runs)
        return result
    rss = PeakRss()
    with (
        Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=say,
            transient=True,
        ) as bars,
        rss.watching(),
        stopwatch() as t_gen,
    ):
        tasks: dict[str, Any] = {}

        def progress(what: str, done: int, total: int) -> None:
            stop_point()  # a SIGTERM's exception raised inside a polars write is lost there
            if what not in tasks:
                tasks[what] = bars.add_task(what, total=total)
            bars.update(tasks[what], completed=done)

        written = write_fleet(spec, home, progress)
    result = BenchResult(spec=spec, home=home, written=written)
    result.stages.append(
        StageTime("generate", t_gen[0], written.dcgm_rows, rss.peak, "sources + config", t_gen[1])
    )
    pipeline_gpu_stage: float | None = None

    if "pipeline" in stages:
        # the dbt project's manifest, parsed now when a file of the project changed since the
        # last parse (a developer's edit; a deployed project parses once): otherwise the run
        # would pay it while loading its definitions, 5-6 s of the whole run on this machine
        with stopwatch() as t_parse:
            parsed = dbt_project_changed(home)
        if parsed:
            result.stages.append(
                StageTime("dbt parse (before the run)", t_parse[0], note="the project changed")
            )
        rss = PeakRss()
        say.print(f"running the pipeline over {spec.first_day}..{spec.last_day}")
        with rss.watching(), stopwatch() as t_run:
            run = run_pipeline(home, spec.first_day, spec.last_day)
        steps = step_seconds(home, run.run_id)
        grouped = group_steps(steps)
        rows = {
            "DCGM ingest": written.dcgm_rows,
            "scheduler ingest": written.sacct_rows,
            "billing ingest": written.cur_rows,
        }
        for name, seconds in grouped.items():
            result.stages.append(StageTime(name, seconds, rows.get(name)))
        overhead = t_run[0] - sum(steps.values())
        result.stages.append(StageTime("Dagster and run overhead", overhead))
        result.stages.append(
            StageTime("pipeline, whole run", t_run[0], written.dcgm_rows, rss.peak, "", t_run[1])
        )
        target = home / "build" / "dbt" / run.run_id
        models = dbt_model_seconds(target)
        upstream = model_ancestors(target, GPU_HOUR_MART)
        gpu_models = sum(s for uid, s in models.items() if uid in upstream)
        pipeline_gpu_stage = grouped["DCGM ingest"] + gpu_models
        result.stages.append(
            StageTime(
                "pipeline GPU-hour stage",
                pipeline_gpu_stage,
                written.gpu_samples,
                note=f"DCGM ingest + {len(upstream)} dbt models up to {GPU_HOUR_MART}",
            )
        )
        result.checks["planted"] = check_planted(planted_totals(spec), home / "warehouse.duckdb")

    base_s: float | None = None
    if "baseline" in stages:
        t0 = datetime.combine(spec.first_day, datetime.min.time(), UTC).timestamp()
        t1 = (
            datetime.combine(spec.last_day + timedelta(days=1), datetime.min.time(), UTC)
        ).timestamp()
        sacct = sorted((home / "sources" / "aws" / "sacct").glob("sacct-*.txt"))
        rss = PeakRss()
        say.print("running the pandas baseline")
        with rss.watching(), stopwatch() as t_base:
            base = gpu_hour_states(written.dcgm_files, sacct, t0, t1, IDLE_THRESHOLD)
        base_s = t_base[0]
        result.stages.append(
            StageTime(
                "pandas baseline",
                base_s,
                written.gpu_samples,
                rss.peak,
                "GPU-hours + runs",
                t_base[1],
            )
        )
        if "pipeline" in stages:
            result.checks["baseline"] = check_baseline(base, home / "warehouse.duckdb")

    low_s: float | None = None
    if "lower_bound" in stages:
        rss = PeakRss()
        with rss.watching(), stopwatch() as t_low:
            scanned = scan_gpu_hours(written.dcgm_files, IDLE_THRESHOLD)
        low_s = t_low[0]
        result.stages.append(
            StageTime(
                "DuckDB scan (lower bound)", low_s, scanned[1], rss.peak, "one group-by", t_low[1]
            )
        )

    if "ingest" in stages and "pipeline" not in stages:
        say.print("landing the sources (no dbt) and the DCGM landing suite")
        for name, wall, cpu, rows, peak, note in run_ingest_stage(spec, home, written):
            result.stages.append(StageTime(name, wall, rows, peak, note, cpu))

    if "dcgm_parse" in stages:
        with stopwatch() as t_parse:
            dcgm_main(["--samples", str(dcgm_samples), "--repeat", "1"])
        result.stages.append(StageTime("DCGM text parse", t_parse[0], dcgm_samples))

    if "daily" in stages:
        result.daily = run_daily_stage(spec, home / "daily", history_days, say.print, daily_runs)

    if pipeline_gpu_stage:
        if base_s:
            result.ratios["speed-up over the pandas baseline"] = base_s / pipeline_gpu_stage
        if low_s:
            result.ratios["x the DuckDB scan lower bound"] = pipeline_gpu_stage / low_s
    return result


def print_daily(r: BenchResult, console: Console) -> None:
    s = r.spec
    table = Table(
        title=f"daily runs after each history ({s.gpus} GPUs, a scrape every {s.scrape_s} s, "
        "an open-month CUR redelivery before each daily run; the median of the runs)"
    )
    for col in ("history days", "history build s", "daily run s", "each run s"):
        table.add_column(col, justify="right")
    for col in ("daily CPU s", "dbt build s"):
        table.add_column(col, justify="right")
    table.add_column("peak RSS GiB", justify="right")
    for col in ("publish s", "published MB", "history MB (not copied)"):
        table.add_column(col, justify="right")
    table.add_column("full refresh", justify="left")
    for d in r.daily:
        table.add_row(
            f"{d.history_days}",
            f"{d.history_seconds:.1f}",
            f"{d.daily_seconds:.1f}",
            "/".join(f"{x:.1f}" for x in d.daily_runs_seconds),
            f"{d.daily_cpu_seconds:.1f}",
            f"{d.daily_dbt_seconds:.1f}",
            _gib(d.daily_peak_rss),
            f"{d.daily_publish_seconds:.2f}",
            f"{d.published_bytes / 1e6:.0f}",
            f"{d.history_bytes / 1e6:.0f}",
            d.full_refresh or "no",
        )
    console.print(table)
    ratio = daily_ratio(r.daily)
    if ratio is not None:
        longest = max(d.history_days for d in r.daily)
        shortest = min(d.history_days for d in r.daily)
        console.print(
            f"daily run after {longest} days / after {shortest} days: {ratio:.2f}x "
            "(the medians, wall clock)"
        )
    grew = growth(r.daily)
    if grew is not None and grew.shortest_total:
        console.print(
            f"dbt's nodes, their execution seconds summed: {grew.shortest_total:.1f} s after "
            f"{grew.shortest_days} days, {grew.longest_total:.1f} s after {grew.longest_days}"
        )
        for node, before, after in grew.grown:
            grown = after - before
            console.print(f"  grew most: {node} {before:.2f} -> {after:.2f} s (+{grown:.2f})")


def print_result(r: BenchResult, console: Console) -> None:
    s = r.spec
    console.print(
        f"machine: {platform.machine()}, {os.cpu_count()} CPUs, "
        f"{_total_memory_gib():.0f} GiB, Python {platform.python_version()}, "
        f"load average {os.getloadavg()[0]:.1f}; DuckDB memory_limit "
        f"{s.memory_limit or '80% (default)'}, threads {s.threads or 'one a CPU (default)'}"
    )
    if r.daily:
        print_daily(r, console)
    if r.written is None:
        return
    console.print(
        f"fleet: {s.gpus} GPUs ({s.nodes} nodes), {s.days} day(s) from {s.first_day}, a scrape "
        f"every {s.scrape_s} s, {r.written.jobs} jobs: {r.written.gpu_samples:,} GPU samples, "
        f"{r.written.dcgm_rows:,} long DCGM rows in {len(r.written.dcgm_files)} files, "
        f"{r.written.sacct_rows:,} sacct lines, {r.written.cur_rows:,} CUR lines"
    )
    table = Table(title="fleetledger bench")
    for col in ("stage", "input rows", "seconds", "CPU s", "rows/s", "peak RSS GiB", "note"):
        table.add_column(col, justify="left" if col in ("stage", "note") else "right")
    for st in r.stages:
        rate = f"{st.rows / st.seconds:,.0f}" if st.rows and st.seconds > 0 else ""
        table.add_row(
            st.name,
            f"{st.rows:,}" if st.rows is not None else "",
            f"{st.seconds:.2f}",
            f"{st.cpu_seconds:.1f}" if st.cpu_seconds is not None else "",
            rate,
            _gib(st.peak_rss),
            st.note,
        )
    console.print(table)
    for name, value in r.ratios.items():
        console.print(f"pipeline GPU-hour stage: {value:.2f} {name}")
    if "baseline" in r.checks:
        c = r.checks["baseline"]
        console.print(
            f"baseline = warehouse: {c['gpu_hour_rows']:,.0f} GPU-hours (max |diff| "
            f"{c['max_abs_diff_seconds']:.2g} s), {c['run_rows']:,.0f} runs (max |diff| "
            f"{c['max_abs_diff_gpu_hours']:.2g} GPU-h)"
        )
    if "planted" in r.checks:
        p = r.checks["planted"]
        console.print(
            "warehouse = plan: busy {busy_seconds:,.0f} s, allocated-idle "
            "{allocated_idle_seconds:,.0f} s, unallocated {unallocated_seconds:,.0f} s, "
            "down {down_seconds:,.0f} s".format(**p)
        )


def _total_memory_gib() -> float:
    import psutil

    return psutil.virtual_memory().total / 2**30


def _option_error(err: Any) -> str:
    """A bad `warehouse:` setting as the option that gave it (`--memory-limit '3 gigs': ...`)."""
    field_name = str(err["loc"][0]) if err.get("loc") else ""
    option = "--" + field_name.replace("_", "-")
    msg = str(err["msg"]).removeprefix("Value error, ")
    given = str(err.get("input"))
    return f"{option}: {msg}" if given in msg else f"{option} {given}: {msg}"


@contextmanager
def _sigterm_exits() -> Iterator[None]:
    """SIGTERM (`kill`, a CI job's timeout) ends the benchmark as Ctrl-C does, through the
    `finally` that removes a temporary home (gigabytes at the target) and stops the daily
    stage's child runs, instead of killing the process where it stands; it sets
    `STOP_REQUESTED` (a pipeline run reports the interruption as its own failure). Main thread
    only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, _frame: Any) -> None:
        STOP_REQUESTED.set()
        raise SystemExit(128 + signum)

    STOP_REQUESTED.clear()
    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="fleetledger bench", description=__doc__)
    p.add_argument("--gpus", type=int, default=1024, help="GPUs, 8 a node (1024)")
    p.add_argument("--days", type=int, default=7, help="days of data (7)")
    p.add_argument("--scrape-interval", type=int, default=30, help="seconds between scrapes (30)")
    p.add_argument(
        "--jobs-per-day", type=int, default=0, help="Slurm jobs a day (default: 2 a node)"
    )
    p.add_argument("--seed", type=int, default=0, help="the generator's seed (0)")
    p.add_argument("--out", type=Path, help="the FLEETLEDGER_HOME to write (default: a temp dir)")
    p.add_argument("--keep", action="store_true", help="keep the home (a temp dir is removed)")
    p.add_argument(
        "--stages",
        default=",".join(DEFAULT_STAGES),
        help=f"comma-separated, of {', '.join(STAGES)} (default: {','.join(DEFAULT_STAGES)})",
    )
    p.add_argument(
        "--dcgm-samples", type=int, default=3_000_000, help="samples of the dcgm_parse stage"
    )
    p.add_argument(
        "--history-days",
        default="7,90",
        help="the daily stage's history lengths, comma-separated (7,90)",
    )
    p.add_argument(
        "--daily-runs",
        type=int,
        default=3,
        help="the daily stage's daily runs after each history; it reports their median (3)",
    )
    p.add_argument(
        "--memory-limit",
        help="the fleet's warehouse.memory_limit (DuckDB's, for dbt and ingest; default 80%%)",
    )
    p.add_argument("--threads", type=int, help="the fleet's warehouse.threads (default: one a CPU)")
    args = p.parse_args(argv)
    try:
        histories = [int(x) for x in args.history_days.split(",") if x.strip()]
    except ValueError:
        p.error(f"--history-days {args.history_days!r}: comma-separated whole days")
    if any(h < 1 for h in histories):
        p.error(f"--history-days {args.history_days!r}: every history is at least 1 day")
    if args.daily_runs < 1:
        p.error(f"--daily-runs {args.daily_runs}: at least 1 daily run")
    stages = [s.strip() for s in args.stages.split(",") if s.strip()]
    unknown = [s for s in stages if s not in STAGES]
    if unknown:
        p.error(f"unknown stage {', '.join(unknown)} (one of {', '.join(STAGES)})")
    spec = ScaleSpec(
        gpus=args.gpus,
        days=args.days,
        scrape_s=args.scrape_interval,
        jobs_per_day=args.jobs_per_day,
        seed=args.seed,
        memory_limit=args.memory_limit,
        threads=args.threads,
    )
    try:
        spec.validate()
        # the fleet's `warehouse:` settings, checked before minutes of generating the fleet
        WarehouseSettings(
            memory_limit=spec.memory_limit or DEFAULT_MEMORY_LIMIT, threads=spec.threads
        )
    except ValidationError as e:
        p.error("; ".join(_option_error(err) for err in e.errors()))
    except ValueError as e:
        p.error(str(e))
    # a log file or pipe gets the whole table, not 80 columns
    console = Console(width=None if sys.stdout.isatty() else 132)
    home = args.out or Path(tempfile.mkdtemp(prefix="fleetledger-bench-"))
    if args.out and any(home.iterdir() if home.exists() else ()):
        p.error(f"--out {home} is not empty")
    try:
        with _sigterm_exits():
            result = run_bench(
                spec, home, stages, console, args.dcgm_samples, histories, args.daily_runs
            )
    except Mismatch as e:
        console.print(f"[red bold]MISMATCH[/] {e}")
        return 1
    except SystemExit:
        if not STOP_REQUESTED.is_set():
            raise
    except Exception:
        # after a SIGTERM, whatever the stop surfaced as is the stop: DuckDB interrupts its
        # query and raises its own error ("Query interrupted") in place of the handler's
        if not STOP_REQUESTED.is_set():
            if not args.keep and args.out is None:
                # a failed (or, during a Dagster run, interrupted: Dagster takes SIGTERM as its
                # own interrupt) run's log lies in the home
                console.print(f"the benchmark failed; its home {home} is removed (--keep keeps it)")
            raise
    finally:
        if not args.keep and args.out is None:
            shutil.rmtree(home, ignore_errors=True)
    if STOP_REQUESTED.is_set():
        kept = f"the home is kept: {home}" if args.keep or args.out else "the home was removed"
        console.print(f"stopped by SIGTERM; {kept}")
        return 128 + signal.SIGTERM
    print_result(result, console)
    if args.keep or args.out:
        console.print(f"home: {home}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
