"""The daily-run stage of the scale benchmark (`--stages daily`): does a daily run stay flat as
history grows?

For each history length H of `--history-days` (7 and 90 by default) it writes a fleet of the
benchmark's size over H + 1 days into its own home, builds the first H days in one run (the
history, timed apart), then redelivers the open month's CUR (a new execution id in its
manifest, as AWS does every day while a month is open: the billing ingest re-lands the period and
the cost models recompute it) and times the daily run of day H + 1. Each run is a process of its
own (benchmarks/pipeline_process.py), as a scheduled daily run is. The figure is the ratio of
the longest history's daily run to the shortest's (issue target: at most 1.25 for 90 vs 7 days
on 128 GPUs at 60 s). See docs/performance.md.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from benchmarks.measure import PeakRss, step_seconds, stopwatch
from benchmarks.pipeline_process import run_in_process
from benchmarks.scale_fleet import ScaleSpec, write_fleet
from fleetledger.publish import history_path, published_path

CUR_EXPORT = Path("sources") / "aws" / "cur" / "fleet-cur"


@dataclass(frozen=True)
class DailyTime:
    """One history length: its build, and the daily run after it."""

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


def _start_for(history_days: int) -> date:
    """The first day of a fleet whose daily run (day history + 1) is the day before yesterday."""
    return datetime.now(UTC).date() - timedelta(days=history_days + 2)


def run_daily_stage(
    spec: ScaleSpec,
    root: Path,
    histories: Sequence[int],
    say: Callable[[str], None] = lambda _m: None,
) -> list[DailyTime]:
    """Build each history in `root/daily-<H>` and time the daily run after it."""
    out = []
    for h in histories:
        if h < 1:
            raise ValueError(f"--history-days: {h} is not a positive number of days")
        fleet = replace(spec, days=h + 1, start=_start_for(h))
        home = root / f"daily-{h}"
        home.mkdir(parents=True, exist_ok=False)
        say(f"daily stage: writing {fleet.gpus} GPUs x {h + 1} days into {home}")
        write_fleet(fleet, home)
        say(f"daily stage: building the {h}-day history ({fleet.first_day}..)")
        # each run in a process of its own, as a scheduled daily run is: the daily run does not
        # inherit what the history build left in the benchmark's process
        with stopwatch() as t_hist:
            run_in_process(home, fleet.first_day, fleet.last_day - timedelta(days=1))
        redeliver_open_month(home, f"{h:04d}")
        say(f"daily stage: the daily run of {fleet.last_day} after {h} days")
        rss = PeakRss()
        with rss.watching(), stopwatch() as t_day:
            daily = run_in_process(home, fleet.last_day, fleet.last_day)
        steps = step_seconds(home, daily.run_id)
        out.append(
            DailyTime(
                history_days=h,
                history_seconds=t_hist[0],
                history_cpu_seconds=t_hist[1],
                daily_seconds=t_day[0],
                daily_cpu_seconds=t_day[1],
                daily_dbt_seconds=steps.get("dbt_warehouse", 0.0),
                daily_peak_rss=rss.peak or 0,
                full_refresh=daily.full_refresh,
                daily_publish_seconds=steps.get("warehouse_snapshot", 0.0),
                published_bytes=_size(published_path(home)),
                history_bytes=_size(history_path(home)),
            )
        )
    return out


def _size(path: Path) -> int:
    return path.stat().st_size if path.exists() else 0


def daily_ratio(times: Sequence[DailyTime]) -> float | None:
    """The longest history's daily run over the shortest's (wall seconds)."""
    if len(times) < 2:
        return None
    by_days = sorted(times, key=lambda t: t.history_days)
    return by_days[-1].daily_seconds / by_days[0].daily_seconds
