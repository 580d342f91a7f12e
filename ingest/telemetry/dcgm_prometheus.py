"""A live Prometheus over its HTTP API → `dcgm_samples`, one UTC day at a time
(kind `dcgm`, option `format: prometheus_api`, location = the server's base URL).

For each metric and each time chunk `[a, b)` of the day (default 1 h) it asks /api/v1/query for
the range selector `METRIC{selector}[<chunk>s]` evaluated at `b − 1 ms`. A range selector returns
the raw samples as scraped (query_range would resample them at its step), and evaluating it 1 ms
before the chunk's end makes the chunks tile the day whether the server's range is closed on the
left (Prometheus 2.x) or open (3.x); samples outside `[a, b)` are dropped, so none is counted
twice.

Resumable: every chunk's parsed rows are checkpointed under `state_dir` (the registry uses
`<home>/state/dcgm_prometheus/<source>/date=D/`) before the next chunk is asked for; a rerun after
a failure reads the finished chunks back and asks only for the rest. The registry deletes the
day's checkpoints once the day is landed. Option `resume: false` ignores old checkpoints.

Options: `metrics` (default `DEFAULT_METRICS`: what the marts and fleet health use),
`selector` (label matchers added to every query, e.g. `{job="dcgm-exporter"}`),
`chunk_seconds` (3600), `timeout_seconds` (60), `retries` (3), `bearer_token` (write it as a
`${ENV_VAR}` reference), `node_label` (as for scrapes).
"""

from __future__ import annotations

import gzip
import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, empty_quarantine
from ingest.core.partitions import land_partition, report_blanks
from ingest.core.spec import LandContext
from ingest.telemetry.dcgm_checks import check_samples
from ingest.telemetry.dcgm_json import parse_prometheus_json
from ingest.telemetry.dcgm_labels import DCGM_SHAPE
from ingest.telemetry.series_shape import SeriesShape

#: the metrics int_gpu_samples reads, the energy counter, the XID counter and the fields of
#: the fleet-health marts (int_health_gpu_samples)
DEFAULT_METRICS = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",
    "DCGM_FI_DEV_XID_ERRORS",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
    "DCGM_EXP_XID_ERRORS_COUNT",
    "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "DCGM_FI_DEV_CLOCKS_EVENT_REASONS",
    "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
    "DCGM_FI_DEV_ROW_REMAP_FAILURE",
)

Fetch = Callable[[str], bytes]
#: the plausibility checks of one chunk's samples (DCGM's: dcgm_checks.check_samples)
Check = Callable[..., ReadResult]


@dataclass(frozen=True)
class Pull:
    """What a live pull fills: the landing table's shape, the metrics asked for when option
    `metrics` is unset, the checks of each chunk, and the folder under `<home>/state/` that
    holds the checkpoints. `DCGM_PULL` is kind dcgm's; kind inference_metrics has its own
    (ingest/telemetry/vllm.py)."""

    shape: SeriesShape
    default_metrics: tuple[str, ...]
    check: Check
    state_name: str


@dataclass(frozen=True)
class Chunk:
    metric: str
    start: datetime  # inclusive
    end: datetime  # exclusive

    @property
    def key(self) -> str:
        return f"{self.metric}-{self.start.strftime('%Y%m%dT%H%M%S')}"


DCGM_PULL = Pull(DCGM_SHAPE, DEFAULT_METRICS, check_samples, "dcgm_prometheus")


def day_chunks(day: date, metrics: list[str], chunk_seconds: int) -> list[Chunk]:
    """The (metric, [a, b)) chunks that tile one UTC day, metric by metric."""
    if chunk_seconds <= 0:
        raise IngestError(f"option chunk_seconds must be > 0, got {chunk_seconds}")
    a0 = datetime(day.year, day.month, day.day, tzinfo=UTC)
    end = a0 + timedelta(days=1)
    out: list[Chunk] = []
    for m in metrics:
        a = a0
        while a < end:
            b = min(a + timedelta(seconds=chunk_seconds), end)
            out.append(Chunk(m, a, b))
            a = b
    return out


def query_url(base: str, chunk: Chunk, selector: str = "") -> str:
    """The /api/v1/query URL for one chunk: `metric{selector}[Ns]` at end − 1 ms."""
    seconds = int((chunk.end - chunk.start).total_seconds())
    expr = f"{chunk.metric}{selector}[{seconds}s]"
    at = (chunk.end - timedelta(milliseconds=1)).timestamp()
    params = urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    return f"{base.rstrip('/')}/api/v1/query?{params}"


def http_fetch(
    *, timeout: float = 60.0, retries: int = 3, bearer_token: str | None = None
) -> Fetch:
    """A GET with retries (1 s, 2 s, 4 s … apart) on connection errors and 5xx answers; a 4xx
    answer (a bad query, too many samples) fails at once with Prometheus' error text."""

    def fetch(url: str) -> bytes:
        headers = {"Accept-Encoding": "gzip", "User-Agent": "fleetledger"}
        if bearer_token:
            headers["Authorization"] = f"Bearer {bearer_token}"
        last = ""
        for attempt in range(retries + 1):
            if attempt:
                time.sleep(min(2 ** (attempt - 1), 30))
            try:
                req = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(req, timeout=timeout) as resp:
                    body = resp.read()
                    if resp.headers.get("Content-Encoding") == "gzip":
                        body = gzip.decompress(body)
                    return bytes(body)
            except urllib.error.HTTPError as err:
                text = err.read().decode("utf-8", errors="replace")[:500]
                last = f"HTTP {err.code}: {text}"
                if err.code < 500:
                    break
            except (urllib.error.URLError, TimeoutError, ConnectionError) as err:
                last = f"{getattr(err, 'reason', err)}"
        raise IngestError(f"Prometheus query failed: {last}", file=url)

    return fetch


class Checkpoints:
    """Parsed chunks on disk: `<key>.parquet` (rows), `<key>.q.parquet` (quarantine) and
    `<key>.json` (sentinel count; written last, so a chunk without it is not done)."""

    def __init__(self, directory: Path | None) -> None:
        self.dir = directory

    def load(self, chunk: Chunk) -> ReadResult | None:
        if self.dir is None or not (self.dir / f"{chunk.key}.json").exists():
            return None
        meta = json.loads((self.dir / f"{chunk.key}.json").read_text())
        rows = pl.read_parquet(self.dir / f"{chunk.key}.parquet")
        q = pl.read_parquet(self.dir / f"{chunk.key}.q.parquet")
        return ReadResult(rows, q, sentinels_dropped=int(meta["sentinels_dropped"]))

    def save(self, chunk: Chunk, result: ReadResult) -> None:
        if self.dir is None:
            return
        self.dir.mkdir(parents=True, exist_ok=True)
        for suffix, frame in ((".parquet", result.rows), (".q.parquet", result.quarantine)):
            tmp = self.dir / f".{chunk.key}{suffix}.partial"
            frame.write_parquet(tmp)
            os.replace(tmp, self.dir / f"{chunk.key}{suffix}")
        tmp = self.dir / f".{chunk.key}.json.partial"
        tmp.write_text(json.dumps({"sentinels_dropped": result.sentinels_dropped}))
        os.replace(tmp, self.dir / f"{chunk.key}.json")

    def clear(self) -> None:
        if self.dir is None or not self.dir.exists():
            return
        for p in self.dir.iterdir():
            if p.is_file():
                p.unlink()
        self.dir.rmdir()


def read_prometheus_day(
    base_url: str,
    day: date,
    *,
    source: str,
    options: dict[str, Any] | None = None,
    state_dir: Path | None = None,
    fetch: Fetch | None = None,
    pull: Pull | None = None,
) -> ReadResult:
    """Every sample of the configured metrics with a time on `day` (UTC), chunk by chunk.
    Raises IngestError when a chunk cannot be fetched or parsed; chunks done so far stay
    checkpointed in `state_dir`. `pull`: the kind's table and checks (default DCGM's)."""
    options = options or {}
    pull = pull or DCGM_PULL
    table = pull.shape.table
    raw_metrics = options.get("metrics") or pull.default_metrics
    metrics = [raw_metrics] if isinstance(raw_metrics, str) else [str(m) for m in raw_metrics]
    selector = str(options.get("selector") or "").strip()
    if selector and not selector.startswith("{"):
        selector = "{" + selector + "}"  # `job="dcgm"` as well as `{job="dcgm"}`
    chunk_seconds = int(options.get("chunk_seconds", 3600))
    node_label = options.get("node_label")
    if fetch is None:
        fetch = http_fetch(
            timeout=float(options.get("timeout_seconds", 60)),
            retries=int(options.get("retries", 3)),
            bearer_token=options.get("bearer_token"),
        )
    checkpoints = Checkpoints(state_dir)
    if state_dir is not None and options.get("resume", True) is False:
        checkpoints.clear()
    results: list[ReadResult] = []
    for chunk in day_chunks(day, metrics, chunk_seconds):
        done = checkpoints.load(chunk)
        if done is None:
            url = query_url(base_url, chunk, selector)
            done = pull.check(
                parse_prometheus_json(
                    fetch(url),
                    source=source,
                    file=url,
                    node_label=node_label,
                    window=(chunk.start, chunk.end),
                    shape=pull.shape,
                ),
                options=options,
            )
            checkpoints.save(chunk, done)
        results.append(done)
    if not results:
        return ReadResult(empty_frame(table), empty_quarantine(), files=[base_url])
    combined = ReadResult.concat(table, results)
    combined.files = [base_url]
    return combined


def land_prometheus(ctx: LandContext, pull: Pull | None = None) -> None:
    """dcgm from a live Prometheus (option `format: prometheus_api`, location = its URL): each
    day is asked for chunk by chunk, checkpointed under
    `<home>/state/dcgm_prometheus/<source>/date=D/` and landed whole; the checkpoints of a
    landed day are deleted, those of a failed day let the next run resume. `pull`: another
    kind's table, checks and state folder (default DCGM's)."""
    pull = pull or DCGM_PULL
    name, url, report = ctx.source.name, ctx.location, ctx.report
    for day in ctx.days:
        partition = f"date={day.isoformat()}"
        state = ctx.home / "state" / pull.state_name / name / partition
        result = read_prometheus_day(
            url, day, source=name, options=ctx.options, state_dir=state, pull=pull
        )
        report.files_read.extend(result.files)
        report.sentinels_dropped += result.sentinels_dropped
        report_blanks(report, result.sentinels_dropped, day)
        land_partition(
            ctx,
            partition,
            result.rows,
            result.quarantine,
            reason=f"no samples for {day} from {url}",
        )
        Checkpoints(state).clear()
