"""The duplicate filter of a partition's files (ingest/core/duplicates.py): repeats inside a
file and across files are dropped and counted, first occurrence winning, and the series hash
its summaries use only decides where to look: with every series sharing one hash, the kept
rows and the counts are the same."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from ingest.core.duplicates import DuplicateFilter

KEY = ("time", "host", "metric")
T0 = datetime(2026, 11, 2, tzinfo=UTC)


def rows(*samples: tuple[str, str, int, float]) -> pl.DataFrame:
    """(host, metric, seconds after T0, value) rows."""
    return pl.DataFrame(
        {
            "time": [T0 + timedelta(seconds=s) for _, _, s, _ in samples],
            "host": [h for h, _, _, _ in samples],
            "metric": [m for _, m, _, _ in samples],
            "value": [v for _, _, _, v in samples],
        }
    )


FILES = {
    Path("a.parquet"): rows(
        ("n1", "util", 0, 1.0),
        ("n1", "util", 30, 2.0),
        ("n1", "util", 60, 3.0),
        ("n1", "power", 0, 400.0),
        ("n1", "power", 30, 410.0),
    ),
    Path("b.parquet"): rows(
        # first a series a.parquet does not have (a summary naming each hash by its first
        # row's series would miss the others' overlap when hashes collide)
        ("n2", "util", 0, 5.0),
        ("n2", "util", 0, 5.0),  # a repeat inside the file
        ("n1", "util", 60, 3.0),  # a.parquet's row, the same value
        ("n1", "util", 90, 4.0),
        ("n1", "power", 30, 999.0),  # a.parquet's key, another value
        ("n1", "power", 60, 420.0),
    ),
}


def run_filter() -> tuple[list[pl.DataFrame], DuplicateFilter]:
    dedupe = DuplicateFilter(KEY, lambda path: FILES[path])
    return [dedupe.keep(path, frame) for path, frame in FILES.items()], dedupe


def kept_rows(frame: pl.DataFrame) -> list[tuple[str, str, float, float]]:
    return [
        (h, m, (t - T0).total_seconds(), v)
        for t, h, m, v in frame.select("time", "host", "metric", "value").iter_rows()
    ]


def test_repeats_dropped_first_wins_whatever_the_hashes(row_hashes: str) -> None:
    (a, b), dedupe = run_filter()
    assert a.height == 5
    assert kept_rows(b) == [
        ("n2", "util", 0.0, 5.0),
        ("n1", "util", 90.0, 4.0),
        ("n1", "power", 60.0, 420.0),
    ]
    assert dedupe.found.count == 3
    assert dedupe.found.differing == 1  # the power sample at 30 s: 999 was not kept
    assert dedupe.found.by_file == {"b.parquet": 3}
