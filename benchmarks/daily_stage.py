"""The daily-run stage of the scale benchmark (`--stages daily`): does a daily run stay flat as
history grows?

For each history length H of `--history-days` (7 and 90 by default) it writes a fleet of the
benchmark's size over H + K days into its own home (K = `--daily-runs`, 3 by default) and
builds the first H days in one run (the history, timed apart). Then come K rounds of daily
runs: in each, every home redelivers the open month's CUR (a new execution id in its manifest,
as AWS does every day while a month is open: the billing ingest re-lands the period and the
cost models recompute it) and runs its next day, the homes taking turns (one round in order of
history, the next in reverse, so that a machine getting busier or quieter weighs on both
alike). Each run is a process of its own (benchmarks/pipeline_process.py), as a scheduled daily
run is. A home's figure is the median of its K daily runs (each one printed too): one run on a
shared 2-CPU machine varies by more than the growth measured. The figure is the ratio of the
longest history's median daily run to the shortest's (issue target: at most 1.25 for 90 vs 7
days on 128 GPUs at 60 s). See docs/performance.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from statistics import median

from benchmarks.measure import PeakRss, dbt_model_seconds, step_seconds, stop_point, stopwatch
from benchmarks.pipeline_process import run_in_process
from benchmarks.scale_fleet import ScaleSpec, write_fleet
from fleetledger.publish import history_path, published_path

CUR_EXPORT = Path("sources") / "aws" / "cur" / "fleet-cur"


@dataclass(frozen=True)
class DailyTime:
    """One history length: its build, and the daily runs after it (the median of them)."""

    history_days: int
    history_seconds: float
    history_cpu_seconds: float
    daily_seconds: float
    daily_cpu_seconds: float
    daily_dbt_seconds: float
    daily_peak_rss: int
    full_refresh: str | None
    # the daily run's publish step, and what stays where after it: the published snapshot
    # (copied by every publish) and the day models' file (never copied)
    daily_publish_seconds: float = 0.0
    published_bytes: int = 0
    history_bytes: int = 0
    # every daily run's wall seconds, in the order they ran (daily_seconds is their median)
    daily_runs_seconds: tuple[float, ...] = field(default_factory=tuple)
    # each dbt node's execution seconds (run_results.json, by unique_id): the median of the
    # daily runs that ran it
    node_seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class DailyRun:
    """One daily run of one home."""

    seconds: float
    cpu_seconds: float
    dbt_seconds: float
    publish_seconds: float
    peak_rss: int
    full_refresh: str | None
    # each dbt node's execution seconds in this run (run_results.json, by unique_id)
    node_seconds: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True)
class Growth:
    """What the longest history's daily run spends in dbt's nodes beyond the shortest's."""

    shortest_days: int
    longest_days: int
    # the nodes' execution seconds summed (their medians), after each history
    shortest_total: float
    longest_total: float
    # the nodes that grew most: (unique_id, seconds after the shortest, after the longest)
    grown: list[tuple[str, float, float]]


def summarize(
    history_days: int, history: Sequence[float], runs: Sequence[DailyRun], home: Path
) -> DailyTime:
    """A history's figures: the median of its daily runs' times, the highest peak RSS, the first
    full-refresh reason any of them gave (a daily run should give none)."""
    if not runs:
        raise ValueError(f"history of {history_days} days: no daily run to summarize")
    return DailyTime(
        history_days=history_days,
        history_seconds=history[0],
        history_cpu_seconds=history[1],
        daily_seconds=median(r.seconds for r in runs),
        daily_cpu_seconds=median(r.cpu_seconds for r in runs),
        daily_dbt_seconds=median(r.dbt_seconds for r in runs),
        daily_peak_rss=max(r.peak_rss for r in runs),
        full_refresh=next((r.full_refresh for r in runs if r.full_refresh), None),
        daily_publish_seconds=median(r.publish_seconds for r in runs),
        published_bytes=_size(published_path(home)),
        history_bytes=_size(history_path(home)),
        daily_runs_seconds=tuple(r.seconds for r in runs),
        node_seconds={
            node: median(r.node_seconds[node] for r in runs if node in r.node_seconds)
            for node in sorted({n for r in runs for n in r.node_seconds})
        },
    )


def run_order(histories: Sequence[int], rounds: int) -> list[tuple[int, int]]:
    """(history, round) in the order the daily runs go: each round runs every history once,
    in order of the list in even rounds and in reverse in odd ones."""
    order = []
    for k in range(rounds):
        for h in histories if k % 2 == 0 else reversed(histories):
            order.append((h, k))
    return order


def redeliver_open_month(home: Path, stamp: str) -> Path:
    """A redelivery of the newest billing period's CUR export: its manifest gets a new execution
    id (`stamp` replaces the id's last characters) and the data files a new mtime. Returns the
    manifest."""
    manifests = sorted((home / CUR_EXPORT / "metadata").rglob("*Manifest.json"))
    if not manifests:
        raise FileNotFoundError(f"no CUR manifest under {home / CUR_EXPORT / 'metadata'}")
    manifest = manifests[-1]  # BILLING_PERIOD=YYYY-MM sorts by period
    meta = json.loads(manifest.read_text())
    meta["executionId"] = meta["executionId"][: -len(stamp)] + stamp
    manifest.write_text(json.dumps(meta, indent=2))
    period = manifest.parent.name
    for data in (home / CUR_EXPORT / "data" / period).glob("*"):
        data.touch()
    return manifest


def _start_for(history_days: int, daily_runs: int) -> date:
    """The first day of a fleet whose last daily run (day history + daily_runs) is the day
    before yesterday."""
    return datetime.now(UTC).date() - timedelta(days=history_days + daily_runs + 1)


def run_daily_stage(
    spec: ScaleSpec,
    root: Path,
    histories: Sequence[int],
    say: Callable[[str], None] = lambda _m: None,
    daily_runs: int = 3,
) -> list[DailyTime]:
    """Build each history in `root/daily-<H>`, then time `daily_runs` daily runs of each."""
    if daily_runs < 1:
        raise ValueError(f"--daily-runs: {daily_runs} is not a positive number of runs")
    homes: dict[int, Path] = {}
    firsts: dict[int, date] = {}
    built: dict[int, list[float]] = {}
    for h in histories:
        if h < 1:
            raise ValueError(f"--history-days: {h} is not a positive number of days")
        fleet = replace(spec, days=h + daily_runs, start=_start_for(h, daily_runs))
        home = root / f"daily-{h}"
        home.mkdir(parents=True, exist_ok=False)
        say(f"daily stage: writing {fleet.gpus} GPUs x {fleet.days} days into {home}")
        write_fleet(fleet, home, stop_point)
        say(f"daily stage: building the {h}-day history ({fleet.first_day}..)")
        # each run in a process of its own, as a scheduled daily run is: the daily run does not
        # inherit what the history build left in the benchmark's process
        with stopwatch() as t_hist:
            run_in_process(home, fleet.first_day, fleet.first_day + timedelta(days=h - 1))
        homes[h], firsts[h], built[h] = home, fleet.first_day, t_hist
    runs: dict[int, list[DailyRun]] = {h: [] for h in histories}
    for h, k in run_order(histories, daily_runs):
        home, day = homes[h], firsts[h] + timedelta(days=h + k)
        redeliver_open_month(home, f"{h:04d}{k:02d}")
        say(f"daily stage: daily run {k + 1} of {daily_runs} after {h} days ({day})")
        rss = PeakRss()
        with rss.watching(), stopwatch() as t_day:
            daily = run_in_process(home, day, day)
        steps = step_seconds(home, daily.run_id)
        nodes = node_seconds(home, daily.run_id)
        runs[h].append(
            DailyRun(
                seconds=t_day[0],
                cpu_seconds=t_day[1],
                dbt_seconds=steps.get("dbt_warehouse", 0.0),
                publish_seconds=steps.get("warehouse_snapshot", 0.0),
                peak_rss=rss.peak or 0,
                full_refresh=daily.full_refresh,
                node_seconds=nodes,
            )
        )
    return [summarize(h, built[h], runs[h], homes[h]) for h in histories]


def node_seconds(home: Path, run_id: str) -> dict[str, float]:
    """Each dbt node's execution seconds in a run of `home` (its `run_results.json`); a run
    without one is an error, not a run whose nodes took no time."""
    results = home / "build" / "dbt" / run_id
    if not (results / "run_results.json").is_file():
        raise FileNotFoundError(
            f"run {run_id} of {home}: no dbt run_results.json in {results}, so its nodes' "
            "times cannot be compared with the other history's"
        )
    return dbt_model_seconds(results)


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def growth(times: Sequence[DailyTime], top: int = 5) -> Growth | None:
    """Where the longest history's daily run spends more dbt time than the shortest's: the
    nodes' summed medians after each, and the `top` nodes whose median grew most (a node
    either run lacks counts 0 there). None with fewer than two histories."""
    if len(times) < 2:
        return None
    by_days = sorted(times, key=lambda t: t.history_days)
    first, last = by_days[0].node_seconds, by_days[-1].node_seconds
    nodes = set(first) | set(last)
    deltas = sorted(
        ((n, first.get(n, 0.0), last.get(n, 0.0)) for n in nodes),
        key=lambda g: (g[1] - g[2], g[0]),
    )
    return Growth(
        shortest_days=by_days[0].history_days,
        longest_days=by_days[-1].history_days,
        shortest_total=sum(first.values()),
        longest_total=sum(last.values()),
        grown=[g for g in deltas[:top] if g[2] > g[1]],
    )


def daily_ratio(times: Sequence[DailyTime]) -> float | None:
    """The longest history's daily run over the shortest's (their medians, wall seconds)."""
    if len(times) < 2:
        return None
    by_days = sorted(times, key=lambda t: t.history_days)
    return by_days[-1].daily_seconds / by_days[0].daily_seconds
