"""DCGM from a live Prometheus over its HTTP API (format `prometheus_api`).

The real-server test backfills a Prometheus (Debian `prometheus` package, installed by
`.ci/install-system-deps.sh`) with the generator's DCGM samples through `promtool tsdb
create-blocks-from openmetrics`, pulls each day through /api/v1/query range selectors and lands
the same rows as reading the OpenMetrics files. The other tests drive the reader with a fake
fetch or a tiny HTTP server.
"""

from __future__ import annotations

import gzip
import http.server
import json
import shutil
import socket
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from dcgm_fleet import ShapeFleet, sorted_rows

from fleetledger.config import Config, Source
from fleetledger.generator.dcgm_text import METRICS
from ingest.core.errors import IngestError
from ingest.registry import ingest_source
from ingest.telemetry.dcgm_prometheus import (
    DEFAULT_METRICS,
    Chunk,
    day_chunks,
    http_fetch,
    query_url,
    read_prometheus_day,
)

#: every metric the generator's files hold (incl. the health fields of AWS and on-prem)
FILE_METRICS = [name for name, *_ in METRICS]
D1 = date(2026, 10, 2)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _backfill_input(shape_fleet: ShapeFleet, out: Path) -> Path:
    """Every OpenMetrics file of the fleet as one promtool input (one `# EOF`, at the end)."""
    path = out / "fleet.om"
    with open(path, "wb") as fh:
        for provider in ("aws", "gcp", "onprem"):
            for day in shape_fleet.days:
                for f in shape_fleet.files("openmetrics", provider, day):
                    text = gzip.decompress(f.read_bytes())
                    assert text.endswith(b"# EOF\n")
                    fh.write(text[: -len(b"# EOF\n")])
        fh.write(b"# EOF\n")
    return path


@pytest.fixture(scope="module")
def prometheus(shape_fleet: ShapeFleet, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A Prometheus serving the fleet's samples from backfilled blocks; yields its URL."""
    promtool, server = shutil.which("promtool"), shutil.which("prometheus")
    if not promtool or not server:
        pytest.skip("prometheus/promtool not installed (run .ci/install-system-deps.sh)")
    work = tmp_path_factory.mktemp("prometheus")
    tsdb = work / "tsdb"
    subprocess.run(
        [
            promtool,
            "tsdb",
            "create-blocks-from",
            "openmetrics",
            str(_backfill_input(shape_fleet, work)),
            str(tsdb),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    (work / "prometheus.yml").write_text("global:\n  scrape_interval: 1h\nscrape_configs: []\n")
    port = _free_port()
    log = open(work / "prometheus.log", "wb")  # noqa: SIM115 - closed below
    proc = subprocess.Popen(
        [
            server,
            f"--config.file={work / 'prometheus.yml'}",
            f"--storage.tsdb.path={tsdb}",
            "--storage.tsdb.retention.time=100y",
            f"--web.listen-address=127.0.0.1:{port}",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while True:
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=2) as resp:
                    if resp.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    "prometheus did not become ready: "
                    + (work / "prometheus.log").read_text(errors="replace")[-2000:]
                )
            time.sleep(0.3)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _landed(home: Path) -> pl.DataFrame:
    files = sorted((home / "raw" / "dcgm_samples").glob("*/date=*/part-0.parquet"))
    return pl.concat([pl.read_parquet(f) for f in files])


def test_live_prometheus_days_equal_the_files(
    prometheus: str, shape_fleet: ShapeFleet, tmp_path: Path
) -> None:
    """Each source asks for one day at a time, by metric and chunk (2 h, 6 h, 4 h), and lands
    exactly the samples the OpenMetrics files hold for that day: the GKE source takes its host
    from `node`, the selectors split the fleet by provider."""
    files_root = shape_fleet.root / "openmetrics"
    files_cfg = Config(
        base_dir=files_root,
        sources=[
            Source(
                name=f"{p}-dcgm",
                kind="dcgm",
                location=f"sources/{p}/dcgm/{{date}}/*.om.gz",
                options=shape_fleet.options("openmetrics", p),
            )
            for p in ("aws", "gcp", "onprem")
        ],
    )
    api_cfg = Config(
        base_dir=tmp_path,
        sources=[
            Source(
                name="aws-dcgm",
                kind="dcgm",
                location=prometheus,
                options={
                    "format": "prometheus_api",
                    "metrics": FILE_METRICS,
                    "selector": '{Hostname=~"aws-.*"}',
                    "chunk_seconds": 7200,
                },
            ),
            Source(
                name="gcp-dcgm",
                kind="dcgm",
                location=prometheus + "/",
                options={
                    "format": "prometheus_api",
                    "metrics": FILE_METRICS,
                    "selector": '{node=~".+"}',
                    "node_label": "node",
                    "chunk_seconds": 21600,
                },
            ),
            Source(
                name="onprem-dcgm",
                kind="dcgm",
                location=prometheus,
                options={
                    "format": "prometheus_api",
                    "metrics": FILE_METRICS,
                    "selector": '{Hostname=~"dgx-.*"}',
                    "chunk_seconds": 14400,
                },
            ),
        ],
    )
    files_home, api_home = tmp_path / "files", tmp_path / "api"
    for cfg, home in ((files_cfg, files_home), (api_cfg, api_home)):
        for src in cfg.sources:
            report = ingest_source(cfg, src, shape_fleet.days, home)
            assert report.partitions == ["date=2026-10-02", "date=2026-10-03"]
            assert report.rows_quarantined == 0
    want, got = _landed(files_home), _landed(api_home)
    assert got.height == want.height == 505148  # as in test_dcgm_shapes.py
    assert sorted_rows(got).equals(sorted_rows(want))
    # the samples on the day boundary landed in their own day
    midnight = datetime(2026, 10, 3, tzinfo=UTC)
    assert got.filter(pl.col("time") == midnight).height == 8 * 7  # aws-p5-01: 7 metrics
    assert not (api_home / "state" / "dcgm_prometheus" / "aws-dcgm" / "date=2026-10-02").exists()
    lineage = got.filter(pl.col("x_source") == "aws-dcgm").row(0, named=True)
    assert lineage["x_source_file"].startswith(f"{prometheus}/api/v1/query?query=DCGM_FI_DEV_")


def test_live_prometheus_resumes_after_a_failed_chunk(prometheus: str, tmp_path: Path) -> None:
    opts = {"metrics": ["DCGM_FI_DEV_GPU_UTIL"], "chunk_seconds": 21600}
    state = tmp_path / "state"
    real = http_fetch(timeout=30, retries=0)
    calls: list[str] = []

    def failing(url: str) -> bytes:
        calls.append(url)
        if len(calls) == 3:
            raise IngestError("connection reset", file=url)
        return real(url)

    with pytest.raises(IngestError, match="connection reset"):
        read_prometheus_day(
            prometheus, D1, source="s", options=opts, state_dir=state, fetch=failing
        )
    assert len(list(state.glob("*.json"))) == 2  # two chunks done and kept

    calls.clear()

    def counting(url: str) -> bytes:
        calls.append(url)
        return real(url)

    resumed = read_prometheus_day(
        prometheus, D1, source="s", options=opts, state_dir=state, fetch=counting
    )
    assert [c.split("time=")[1] for c in calls] == ["1790963999.999", "1790985599.999"]
    fresh = read_prometheus_day(prometheus, D1, source="s", options=opts)
    assert resumed.rows.height == fresh.rows.height == 31996
    assert resumed.rows.equals(fresh.rows)


# --------------------------------------------------------------------------- without a server


def test_day_chunks_tile_the_day_and_query_urls() -> None:
    chunks = day_chunks(D1, ["A", "B"], 36000)
    assert [(c.metric, c.start.hour, c.end.hour, c.end.day) for c in chunks] == [
        ("A", 0, 10, 2),
        ("A", 10, 20, 2),
        ("A", 20, 0, 3),
        ("B", 0, 10, 2),
        ("B", 10, 20, 2),
        ("B", 20, 0, 3),
    ]
    url = query_url("http://prom:9090/", chunks[2], '{job="dcgm"}')
    assert url == (
        "http://prom:9090/api/v1/query?query=A%7Bjob%3D%22dcgm%22%7D%5B14400s%5D"
        "&time=1790985599.999"
    )
    with pytest.raises(IngestError, match="chunk_seconds must be > 0"):
        day_chunks(D1, ["A"], 0)


def _response(*series: tuple[dict[str, str], list[list[object]]]) -> bytes:
    result = [{"metric": m, "values": v} for m, v in series]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}}
    ).encode()


def test_default_chunks_are_an_hour_of_each_default_metric() -> None:
    assert len(day_chunks(D1, list(DEFAULT_METRICS), 3600)) == 24 * 15
    urls: list[str] = []

    def fetch(url: str) -> bytes:
        urls.append(url)
        return _response()

    r = read_prometheus_day("http://x", D1, source="s", options={"metrics": ["M"]}, fetch=fetch)
    assert r.rows.height == 0
    assert len(urls) == 24
    assert urls[0] == "http://x/api/v1/query?query=M%5B3600s%5D&time=1790902799.999"
    # one metric as a string, a selector without braces
    urls.clear()
    opts = {"metrics": "M", "selector": 'job="d"', "chunk_seconds": 86400}
    read_prometheus_day("http://x", D1, source="s", options=opts, fetch=fetch)
    assert urls == [
        "http://x/api/v1/query?query=M%7Bjob%3D%22d%22%7D%5B86400s%5D&time=1790985599.999"
    ]


def test_chunk_window_keeps_each_sample_once() -> None:
    """A range selector may return the sample on the chunk's start edge twice (2.x ranges are
    closed): only samples in [a, b) are kept, blanks and rejects counted once."""
    labels = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": "GPU-a", "Hostname": "n1"}
    a = 1790899200  # 2026-10-02 00:00 UTC

    def fetch(url: str) -> bytes:
        t = float(url.split("time=")[1]) + 0.001
        start = round(t) - 43200
        return _response(
            (
                labels,
                [
                    [start - 0.001, "9223372036854775794"],  # the previous chunk's
                    [start, "1"],
                    [start + 60, "9223372036854775794"],  # a blank: dropped, counted
                    [start + 43199.999, "2"],
                    [start + 43200, "3"],  # the next chunk's
                ],
            )
        )

    r = read_prometheus_day(
        "http://x", D1, source="s", options={"metrics": ["M"], "chunk_seconds": 43200}, fetch=fetch
    )
    assert r.rows.select("time", "value").rows() == [
        (datetime(2026, 10, 2, 0, 0, tzinfo=UTC), 1.0),
        (datetime(2026, 10, 2, 11, 59, 59, 999000, tzinfo=UTC), 2.0),
        (datetime(2026, 10, 2, 12, 0, tzinfo=UTC), 1.0),
        (datetime(2026, 10, 2, 23, 59, 59, 999000, tzinfo=UTC), 2.0),
    ]
    assert r.sentinels_dropped == 2  # one per chunk: the edge samples are not counted
    assert a == int(datetime(2026, 10, 2, tzinfo=UTC).timestamp())
    assert r.files == ["http://x"]


def test_resume_false_discards_old_checkpoints(tmp_path: Path) -> None:
    labels = {"__name__": "M", "gpu": "0", "UUID": "GPU-a", "Hostname": "n1"}
    value = ["1"]

    def fetch(url: str) -> bytes:
        t = float(url.split("time=")[1]) - 1
        return _response((labels, [[t, value[0]]]))

    opts = {"metrics": ["M"], "chunk_seconds": 86400}
    first = read_prometheus_day(
        "http://x", D1, source="s", options=opts, state_dir=tmp_path, fetch=fetch
    )
    value[0] = "2"
    again = read_prometheus_day(
        "http://x", D1, source="s", options=opts, state_dir=tmp_path, fetch=fetch
    )
    fresh = read_prometheus_day(
        "http://x",
        D1,
        source="s",
        options={**opts, "resume": False},
        state_dir=tmp_path,
        fetch=fetch,
    )
    assert [first.rows["value"][0], again.rows["value"][0], fresh.rows["value"][0]] == [
        1.0,
        1.0,
        2.0,
    ]
    assert Chunk("M", datetime(2026, 10, 2, tzinfo=UTC), datetime(2026, 10, 3, tzinfo=UTC)).key == (
        "M-20261002T000000"
    )


class _Handler(http.server.BaseHTTPRequestHandler):
    answers: list[tuple[int, bytes]] = []
    seen: list[str] = []

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        self.seen.append(self.path + " " + (self.headers.get("Authorization") or ""))
        code, body = self.answers.pop(0)
        self.send_response(code)
        if code == 200:
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_http_fetch_retries_server_errors_not_bad_queries() -> None:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        _Handler.answers = [(503, b"busy"), (200, b'{"ok": 1}')]
        fetch = http_fetch(timeout=5, retries=2, bearer_token="tok")
        assert fetch(f"{base}/api/v1/query?query=up") == b'{"ok": 1}'
        assert _Handler.seen == [
            "/api/v1/query?query=up Bearer tok",
            "/api/v1/query?query=up Bearer tok",
        ]
        _Handler.answers = [
            (422, b'{"status":"error","error":"query processing would load too many samples"}')
        ]
        with pytest.raises(IngestError, match="HTTP 422: .*too many samples"):
            http_fetch(timeout=5, retries=3)(f"{base}/api/v1/query?query=x")
        assert _Handler.answers == []  # a 4xx is not retried
    finally:
        server.shutdown()
        server.server_close()
