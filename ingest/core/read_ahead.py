"""Reading a day's files ahead of the writer.

A day of a large fleet is many files (one per node); parsing one is mostly Polars work that
releases the GIL, and writing the landed partition (Parquet, zstd) is Arrow work that does too.
`read_ahead` parses the next files on worker threads while the caller writes the current one,
and hands the results back in file order, so what lands (row order, the duplicate filter's
"first row wins", the quarantine's order) is what a one-file-at-a-time loop lands. At most
`workers` results wait at once, so memory stays a few files' worth whatever the day's size.

An error in a file is raised when the caller reaches that file, as the plain loop would; the
files after it that were already being read are abandoned.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable, Generator, Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from typing import TypeVar

from ingest.core.duckdb_settings import THREADS_ENV

T = TypeVar("T")
R = TypeVar("R")

#: the environment variable that caps the reader threads (1: read one file at a time)
READERS_ENV = "FLEETLEDGER_INGEST_READERS"


def reader_threads() -> int:
    """Worker threads for reading ahead: `FLEETLEDGER_INGEST_READERS`, else the config's
    `warehouse.threads` (the ingest steps run with `FLEETLEDGER_DUCKDB_THREADS` set from it),
    else one a CPU (at least 2, at most 8)."""
    for name in (READERS_ENV, THREADS_ENV):
        raw = os.environ.get(name, "").strip()
        if raw:
            try:
                return max(1, int(raw))
            except ValueError:
                raise ValueError(f"{name} must be a whole number, got {raw!r}") from None
    return min(8, max(2, os.cpu_count() or 1))


def read_ahead(
    read: Callable[[T], R], items: Iterable[T], workers: int | None = None
) -> Iterator[R]:
    """`read(item)` for each item, in order, up to `workers` of them computed ahead."""
    n = reader_threads() if workers is None else workers
    if n <= 1:
        for item in items:
            yield read(item)
        return
    pending: deque[Future[R]] = deque()
    it = iter(items)
    with ThreadPoolExecutor(max_workers=n, thread_name_prefix="fleetledger-read") as pool:
        try:
            for item in it:
                pending.append(pool.submit(read, item))
                if len(pending) >= n:
                    break
            while pending:
                result = pending.popleft().result()
                nxt = next(it, _END)
                if nxt is not _END:
                    pending.append(pool.submit(read, nxt))  # type: ignore[arg-type]
                yield result
        finally:
            for f in pending:
                f.cancel()


_END = object()


def prefetch(items: Iterable[R], depth: int = 1) -> Generator[R, None, None]:
    """The items of `items`, produced on a thread of their own up to `depth` ahead of the
    consumer (the landing writer compresses one file's rows while the next are prepared).
    An exception of the producer is raised to the consumer at its place in the sequence; a
    consumer that stops early stops the producer (its generator is closed)."""
    q: queue.Queue[tuple[str, object]] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def put(kind: str, value: object) -> bool:
        while not stop.is_set():
            try:
                q.put((kind, value), timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def produce() -> None:
        it = iter(items)
        try:
            for item in it:
                if not put("item", item):
                    break
            else:
                put("end", None)
        except BaseException as err:  # handed to the consumer, raised there
            put("error", err)
        finally:
            close = getattr(it, "close", None)
            if close is not None:
                close()

    worker = threading.Thread(target=produce, name="fleetledger-prefetch", daemon=True)
    worker.start()
    try:
        while True:
            kind, value = q.get()
            if kind == "end":
                return
            if kind == "error":
                assert isinstance(value, BaseException)
                raise value
            yield value  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()
