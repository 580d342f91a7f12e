"""What the scale benchmark measures besides wall clock: the peak resident memory of this
process and all its descendants (dbt runs as a child), and the step timings of a Dagster run
from its event log."""

from __future__ import annotations

import json
import os
import resource
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psutil

#: set when SIGTERM stops the benchmark (benchmarks/scale.py, `_sigterm_exits`)
STOP_REQUESTED = threading.Event()


def stop_point(_what: str = "", _done: int = 0, _total: int = 0) -> None:
    """Raise the stop a SIGTERM asked for, if it did: the handler's own exception is lost
    when it fires inside a polars write, so long loops call this between their steps (it takes
    a progress callback's arguments, to be one)."""
    if STOP_REQUESTED.is_set():
        raise SystemExit(128 + signal.SIGTERM)


def tree_rss(pid: int | None = None) -> int:
    """Resident bytes of process `pid` (default: this one) plus all its descendants."""
    try:
        root = psutil.Process(pid or os.getpid())
        procs = [root, *root.children(recursive=True)]
    except psutil.Error:
        return 0
    total = 0
    for p in procs:
        try:
            total += p.memory_info().rss
        except psutil.Error:  # ended between the listing and the read
            continue
    return total


@dataclass
class PeakRss:
    """The largest `tree_rss` seen by a sampling thread, every `interval` seconds."""

    interval: float = 0.2
    peak: int = 0
    samples: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, tree_rss())
            self.samples += 1
            self._stop.wait(self.interval)

    @contextmanager
    def watching(self) -> Iterator[PeakRss]:
        """Sample while the block runs; `peak` is also this block's high-water mark."""
        self._stop.clear()
        thread = threading.Thread(target=self._run, name="peak-rss", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._stop.set()
            thread.join()
            self.peak = max(self.peak, tree_rss())


def run_event_db(home: Path, run_id: str) -> Path:
    return home / "dagster" / "history" / "runs" / f"{run_id}.db"


def step_seconds(home: Path, run_id: str) -> dict[str, float]:
    """Seconds from STEP_START to STEP_SUCCESS (or STEP_FAILURE) of each step key of a run,
    read from the run's SQLite event log."""
    db = run_event_db(home, run_id)
    if not db.is_file():
        raise FileNotFoundError(f"no Dagster event log for run {run_id} ({db})")
    with sqlite3.connect(db) as con:
        rows = con.execute(
            "select step_key, dagster_event_type, event from event_logs "
            "where run_id = ? and dagster_event_type in "
            "('STEP_START', 'STEP_SUCCESS', 'STEP_FAILURE') order by id",
            (run_id,),
        ).fetchall()
    starts: dict[str, float] = {}
    out: dict[str, float] = {}
    for step, kind, event in rows:
        # the event's own timestamp (epoch seconds, float): the column is second-rounded text
        ts = float(json.loads(event)["timestamp"])
        if kind == "STEP_START":
            starts[step] = ts
        elif step in starts:
            out[step] = ts - starts[step]
    return out


def dbt_model_seconds(target: Path) -> dict[str, float]:
    """Execution seconds of each dbt node of a build (`run_results.json`), by unique_id."""
    results = json.loads((target / "run_results.json").read_text())
    return {r["unique_id"]: float(r.get("execution_time") or 0.0) for r in results["results"]}


def model_ancestors(target: Path, model: str) -> set[str]:
    """The unique_ids of dbt model `model` and every model upstream of it (`manifest.json`)."""
    manifest = json.loads((target / "manifest.json").read_text())
    parents: dict[str, list[str]] = manifest["parent_map"]
    start = next(k for k in parents if k.startswith("model.") and k.endswith(f".{model}"))
    seen: set[str] = set()
    todo = [start]
    while todo:
        node = todo.pop()
        if node in seen or not node.startswith("model."):
            continue
        seen.add(node)
        todo.extend(parents.get(node, []))
    return seen


def cpu_seconds() -> float:
    """User + system CPU seconds of this process and of its children that have ended (dbt)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


@contextmanager
def stopwatch() -> Iterator[list[float]]:
    """`with stopwatch() as t:` ... `t[0]` is the block's wall seconds, `t[1]` its CPU seconds
    (`cpu_seconds`: on a shared machine the wall clock is what the others left over)."""
    cell = [0.0, 0.0]
    start, cpu = time.perf_counter(), cpu_seconds()
    try:
        yield cell
    finally:
        cell[0] = time.perf_counter() - start
        cell[1] = cpu_seconds() - cpu
