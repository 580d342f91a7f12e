"""The benchmark's `ingest` stage: the scale fleet's three sources landed by
`ingest.registry.ingest_source` in this process (no Dagster, no dbt), then the DCGM landing
suite on every landed day, each timed apart with its CPU seconds and peak RSS — the ingest side
of the pipeline, measurable at sizes whose dbt build would take too long on the machine."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from benchmarks.measure import PeakRss, stopwatch
from benchmarks.scale_fleet import ScaleSpec, Written
from fleetledger.config import load_config
from fleetledger.config_warehouse import warehouse_env
from ingest.core.quality_landed import validate_landed
from ingest.registry import ingest_source

#: stage name → the scale fleet's source (benchmarks/scale_fleet.py `config`)
SOURCES = {
    "ingest: DCGM": "aws-dcgm",
    "ingest: scheduler (sacct)": "aws-slurm",
    "ingest: billing (CUR)": "aws-cur",
}
CHECK = "ingest: DCGM landing suite"

#: (stage, wall s, CPU s, rows, peak RSS bytes, note)
Timed = tuple[str, float, float, int, int, str]


def run_ingest_stage(spec: ScaleSpec, home: Path, written: Written) -> Iterator[Timed]:
    """Land the three sources for every day of `spec`, then validate the DCGM days; yields one
    row per step. Raises AssertionError when the suite fails on a landed day."""
    cfg = load_config(home / "fleetledger.yml")
    days = [spec.first_day + timedelta(days=i) for i in range(spec.days)]
    rows = {"aws-dcgm": written.dcgm_rows, "aws-slurm": written.sacct_rows}
    rows["aws-cur"] = written.cur_rows
    for stage, name in SOURCES.items():
        rss = PeakRss()
        with _measure(rss) as t, warehouse_env(cfg.warehouse):
            report = ingest_source(cfg, cfg.source(name), days, home)
        note = f"{report.rows_landed:,} rows landed"
        yield stage, t[0], t[1], rows[name], rss.peak, note
    rss = PeakRss()
    with _measure(rss) as t:
        results = [validate_landed(home, "dcgm_samples", "aws-dcgm", f"date={d}") for d in days]
    failed = [r.summary() for r in results if not r.passed]
    assert not failed, "; ".join(failed)
    note = f"{results[0].expectations} expectations x {len(results)} days"
    yield CHECK, t[0], t[1], sum(r.rows for r in results), rss.peak, note


@contextmanager
def _measure(rss: PeakRss) -> Iterator[list[float]]:
    """The stopwatch and peak RSS sampling around one step."""
    with rss.watching(), stopwatch() as t:
        yield t
