"""Reading a day's files ahead of the writer (ingest/core/read_ahead.py): results come back in
file order whatever the threads' timing, an error is raised at its file, a consumer that stops
early stops the producer, and a day of many files lands exactly what one reader lands."""

from __future__ import annotations

import gzip
import threading
import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from dcgm_write import Sample, text

from fleetledger.config import Config, Source
from ingest.core.duckdb_settings import THREADS_ENV
from ingest.core.read_ahead import READERS_ENV, prefetch, read_ahead, reader_threads
from ingest.registry import ingest_source


def _slow_square(n: int) -> int:
    time.sleep(0.02 * (5 - n % 5))  # later items finish first
    return n * n


def test_results_in_order_with_a_bounded_window() -> None:
    assert list(read_ahead(_slow_square, range(12), workers=3)) == [n * n for n in range(12)]
    assert list(read_ahead(_slow_square, range(4), workers=1)) == [0, 1, 4, 9]
    assert list(read_ahead(_slow_square, [], workers=3)) == []


def test_an_error_is_raised_at_its_item() -> None:
    def read(n: int) -> int:
        if n == 3:
            raise ValueError("file 3 is broken")
        return n

    got: list[int] = []
    with pytest.raises(ValueError, match="file 3 is broken"):
        for value in read_ahead(read, range(8), workers=2):
            got.append(value)
    assert got == [0, 1, 2]


def test_reader_threads_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(READERS_ENV, raising=False)
    monkeypatch.setenv(THREADS_ENV, "1")  # warehouse.threads: 1 -> one file at a time
    assert reader_threads() == 1
    monkeypatch.setenv(READERS_ENV, "3")  # the ingest's own setting wins
    assert reader_threads() == 3
    monkeypatch.setenv(READERS_ENV, "0")
    assert reader_threads() == 1
    monkeypatch.setenv(READERS_ENV, "many")
    with pytest.raises(ValueError, match="FLEETLEDGER_INGEST_READERS must be a whole number"):
        reader_threads()


def test_prefetch_order_errors_and_early_stop() -> None:
    assert list(prefetch(iter(range(5)))) == [0, 1, 2, 3, 4]

    def failing() -> Iterator[int]:
        yield 1
        yield 2
        raise OSError("disk gone")

    got: list[int] = []
    with pytest.raises(OSError, match="disk gone"):
        for v in prefetch(failing()):
            got.append(v)
    assert got == [1, 2]

    closed = threading.Event()
    produced: list[int] = []

    def endless() -> Iterator[int]:
        try:
            n = 0
            while True:
                produced.append(n)
                yield n
                n += 1
        finally:
            closed.set()

    it = prefetch(endless(), depth=1)
    assert [next(it), next(it)] == [0, 1]
    it.close()  # what the writer's error does: the producer stops and its generator closes
    assert closed.is_set()
    assert len(produced) <= 4  # at most the depth and the one in hand ahead


T0 = 1790899200000  # 2026-10-02 00:00:00 UTC, ms
DAY = date(2026, 10, 2)


def _file(node: int) -> bytes:
    samples: list[Sample] = []
    for gpu in range(2):
        labels = {"gpu": str(gpu), "UUID": f"GPU-{node:04d}-{gpu}", "Hostname": f"n{node}"}
        for k in range(30):
            samples.append(("DCGM_FI_DEV_GPU_UTIL", labels, str((node + k) % 100), T0 + k * 60_000))
    # node 7's file repeats node 3's first sample: the earlier file (in sorted order) wins
    if node == 7:
        samples.append(
            ("DCGM_FI_DEV_GPU_UTIL", {"gpu": "0", "UUID": "GPU-0003-0", "Hostname": "n3"}, "99", T0)
        )
    return gzip.compress(text(samples))


def _land(
    tmp_path: Path, readers: str, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, pl.DataFrame]:
    src = tmp_path / "src" / "d" / DAY.isoformat()
    if not src.exists():
        src.mkdir(parents=True)
        for node in range(12):
            (src / f"n{node:02d}.prom.gz").write_bytes(_file(node))
    monkeypatch.setenv(READERS_ENV, readers)
    home = tmp_path / f"home-{readers}"
    cfg = Config(
        base_dir=tmp_path / "src",
        sources=[Source(name="s", kind="dcgm", location="d/{date}/*.prom.gz")],
    )
    report = ingest_source(cfg, cfg.sources[0], [DAY], home)
    [dup] = [f for f in report.findings if f.check == "duplicate_samples"]
    assert (dup.count, dup.severity) == (1, "warning")  # the repeat, with another value
    landed = pl.read_parquet(home / "raw/dcgm_samples/s/date=2026-10-02/*.parquet")
    return report.rows_landed, landed


def test_a_day_of_many_files_lands_the_same_with_readers_ahead(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one_n, one = _land(tmp_path, "1", monkeypatch)
    four_n, four = _land(tmp_path, "4", monkeypatch)
    assert one_n == four_n == 12 * 2 * 30  # node 7's repeat of node 3's sample dropped
    assert four.equals(one)  # same rows, same order: file by file, line by line
    assert four["x_source_file"].map_elements(lambda f: Path(f).name, pl.String).to_list() == [
        f"n{node:02d}.prom.gz" for node in range(12) for _ in range(60)
    ]
    kept = four.filter((pl.col("uuid") == "GPU-0003-0") & (pl.col("x_line_number") == 3))
    assert kept["value"].to_list() == [3.0]  # node 3's value, not node 7's 99
