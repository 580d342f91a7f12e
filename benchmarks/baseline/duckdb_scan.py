"""The lower bound of the GPU-hour stage: DuckDB reads the same long DCGM Parquet once and
aggregates the utilisation samples per GPU and hour in one group-by (no intervals, no jobs).
Nothing that turns samples into GPU-hours can do less work than this scan."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import duckdb

from benchmarks.baseline.gpu_hours import GR_ENGINE


def scan_gpu_hours(files: Sequence[Path], idle_threshold: float) -> tuple[int, int]:
    """(GPU-hour rows, samples aggregated): per GPU and hour, the samples, their mean
    utilisation and how many are at or above `idle_threshold`."""
    con = duckdb.connect()
    try:
        rows, samples = con.execute(
            """
            with per_hour as (
                select
                    uuid,
                    date_trunc('hour', "timestamp") as hour,
                    count(*) as samples,
                    avg(value) as mean_utilization,
                    count(*) filter (where value >= ?) as busy_samples
                from read_parquet(?)
                where metric = ?
                group by uuid, date_trunc('hour', "timestamp")
            )
            select count(*), sum(samples) from per_hour
            """,
            [idle_threshold, [str(f) for f in files], GR_ENGINE],
        ).fetchone()
    finally:
        con.close()
    return int(rows or 0), int(samples or 0)
