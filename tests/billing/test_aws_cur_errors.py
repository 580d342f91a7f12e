"""Broken CUR deliveries fail with a message naming the file and the problem, and land nothing:
the period keeps its previous delivery (lines and delivery records unchanged). S3 reads retry
throttling, 5xx answers and bodies cut off mid-stream."""

from __future__ import annotations

import gzip
import io
import json
import threading
from collections.abc import Iterator
from datetime import date
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from aws_cur_helpers import make_bucket, s3_source, write_config

from ingest.billing.s3 import S3Store, s3_client
from ingest.core.errors import IngestError, SourceUnavailable
from ingest.registry import ingest_source

BUCKET = "broken-deliveries"
BASE = "cur/exp"
PERIOD = "2026-11"
META = f"{BASE}/metadata/BILLING_PERIOD={PERIOD}/exp-Manifest.json"
DATA = f"{BASE}/data/BILLING_PERIOD={PERIOD}"
COLUMNS = ["line_item_line_item_type", "line_item_product_code", "line_item_unblended_cost"]


def parquet_bytes(costs: list[float], cost_column: str = "line_item_unblended_cost") -> bytes:
    buf = io.BytesIO()
    pq.write_table(
        pa.table(
            {
                "line_item_line_item_type": ["Usage"] * len(costs),
                "line_item_product_code": ["AmazonEC2"] * len(costs),
                cost_column: costs,
            }
        ),
        buf,
    )
    return buf.getvalue()


def csv_gz_bytes(costs: list[float]) -> bytes:
    text = ",".join(COLUMNS) + "\n" + "".join(f"Usage,AmazonS3,{c}\n" for c in costs)
    return gzip.compress(text.encode())


def deliver(s3: Any, execution: str, files: dict[str, bytes], listed: list[str]) -> None:
    for name, body in files.items():
        s3.put_object(Bucket=BUCKET, Key=f"{DATA}/{name}", Body=body)
    manifest = {
        "executionId": execution,
        "columns": [{"name": c, "type": "string"} for c in COLUMNS],
        "dataFiles": [f"s3://{BUCKET}/{DATA}/{n}" for n in listed],
    }
    s3.put_object(Bucket=BUCKET, Key=META, Body=json.dumps(manifest).encode())


def snapshot(home: Path) -> dict[str, bytes]:
    """Every landed file of the source (lines, quarantine, delivery records), by path."""
    raw = home / "raw"
    return {
        str(p.relative_to(raw)): p.read_bytes()
        for p in sorted(raw.rglob("*"))
        if p.is_file() and "/_schema/" not in p.as_posix() and "exp-src" in p.as_posix()
    }


@pytest.fixture(scope="module")
def landed_once(
    s3: Any, moto_endpoint: str, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Any, Path]:
    """A period landed from a good delivery (two files: Parquet and gzip CSV). Shared: each
    broken delivery must leave it exactly as it is."""
    tmp_path = tmp_path_factory.mktemp("landed-once")
    if BUCKET not in {b["Name"] for b in s3.list_buckets()["Buckets"]}:
        make_bucket(s3, BUCKET)
    deliver(
        s3,
        "exec-good",
        {
            "exp-00001.snappy.parquet": parquet_bytes([1.0, 2.0]),
            "exp-00002.csv.gz": csv_gz_bytes([3.0]),
        },
        ["exp-00001.snappy.parquet", "exp-00002.csv.gz"],
    )
    cfg = write_config(
        tmp_path, {"sources": [s3_source("exp-src", f"s3://{BUCKET}/{BASE}", moto_endpoint)]}
    )
    r = ingest_source(cfg, cfg.source("exp-src"), [date(2026, 11, 2)], tmp_path)
    assert r.rows_landed == 3
    return cfg, tmp_path


def broken_cases() -> dict[str, tuple[dict[str, bytes], list[str], list[str]]]:
    good = parquet_bytes([5.0])
    return {
        # name: (files to put, files the manifest lists, what the message must say)
        "truncated parquet": (
            {"exp-00001.snappy.parquet": good, "exp-00002.snappy.parquet": good[: len(good) // 2]},
            ["exp-00001.snappy.parquet", "exp-00002.snappy.parquet"],
            [f"s3://{BUCKET}/{DATA}/exp-00002.snappy.parquet", "cannot read Parquet"],
        ),
        "truncated gzip": (
            {"exp-00001.snappy.parquet": good, "exp-00002.csv.gz": csv_gz_bytes([4.0, 5.0])[:-12]},
            ["exp-00001.snappy.parquet", "exp-00002.csv.gz"],
            [f"s3://{BUCKET}/{DATA}/exp-00002.csv.gz", "truncated gzip"],
        ),
        "manifest names a missing file": (
            {"exp-00001.snappy.parquet": good},
            ["exp-00001.snappy.parquet", "exp-00009.snappy.parquet"],
            [
                f"s3://{BUCKET}/{META}",
                f"lists s3://{BUCKET}/{DATA}/exp-00009.snappy.parquet, which does not exist",
            ],
        ),
        "renamed column": (
            {
                "exp-00001.snappy.parquet": good,
                "exp-00002.snappy.parquet": parquet_bytes([7.0], "line_item_unblended_cost_usd"),
            },
            ["exp-00001.snappy.parquet", "exp-00002.snappy.parquet"],
            [
                f"s3://{BUCKET}/{DATA}/exp-00002.snappy.parquet",
                "columns differ from the manifest",
                "missing line_item_unblended_cost",
                "not in the manifest line_item_unblended_cost_usd",
            ],
        ),
    }


@pytest.mark.parametrize("case", sorted(broken_cases()))
def test_broken_delivery_lands_nothing(case: str, s3: Any, landed_once: tuple[Any, Path]) -> None:
    cfg, home = landed_once
    before = snapshot(home)
    assert any("aws_cur_deliveries" in k for k in before)
    files, listed, expected = broken_cases()[case]
    deliver(s3, f"exec-{case.replace(' ', '-')}", files, listed)
    with pytest.raises(IngestError) as err:
        ingest_source(cfg, cfg.source("exp-src"), [date(2026, 11, 2)], home)
    for text in expected:
        assert text in str(err.value)
    # the period still holds the good delivery, and no record of the broken one was written
    assert snapshot(home) == before


def test_renamed_column_without_manifest_columns(tmp_path: Path) -> None:
    """Without a column list in the manifest, a file lacking the cost column still fails."""
    folder = tmp_path / "exp"
    (folder / f"data/BILLING_PERIOD={PERIOD}").mkdir(parents=True)
    (folder / f"metadata/BILLING_PERIOD={PERIOD}").mkdir(parents=True)
    (folder / f"data/BILLING_PERIOD={PERIOD}/exp-00001.snappy.parquet").write_bytes(
        parquet_bytes([1.0], "lineitem_unblendedcost")
    )
    (folder / f"metadata/BILLING_PERIOD={PERIOD}/exp-Manifest.json").write_text(
        json.dumps(
            {"dataFiles": [f"s3://b/x/exp/data/BILLING_PERIOD={PERIOD}/exp-00001.snappy.parquet"]}
        )
    )
    cfg = write_config(
        tmp_path / "home", {"sources": [{"name": "e", "kind": "aws_cur", "location": str(folder)}]}
    )
    with pytest.raises(IngestError, match=r"exp-00001.snappy.parquet: no line_item_unblended_cost"):
        ingest_source(cfg, cfg.source("e"), [date(2026, 11, 1)], tmp_path / "home")
    assert not (tmp_path / "home/raw/aws_cur_lines/e").exists()


# --------------------------------------------------------------------------- retries


class _Script:
    """What the stub S3 answers to successive GETs of the object."""

    def __init__(self, answers: list[str]) -> None:
        self.answers = answers
        self.requests = 0
        self.lock = threading.Lock()


BODY = b"line_item_unblended_cost\n1.5\n"


def _handler(script: _Script) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_GET(self) -> None:  # noqa: N802 (http.server's name)
            with script.lock:
                answer = script.answers[min(script.requests, len(script.answers) - 1)]
                script.requests += 1
            if answer in ("SlowDown", "InternalError"):
                status = 503 if answer == "SlowDown" else 500
                body = (
                    f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>{answer}</Code>"
                    f"<Message>{answer}</Message></Error>"
                ).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/csv")
            self.send_header("ETag", '"abc"')
            self.send_header("Content-Length", str(len(BODY)))
            self.end_headers()
            if answer == "cut":  # the body breaks off
                self.wfile.write(BODY[:5])
                self.wfile.flush()
                self.close_connection = True
                return
            self.wfile.write(BODY)

    return Handler


@pytest.fixture
def stub_s3(moto_endpoint: str) -> Iterator[tuple[str, _Script]]:
    script = _Script([])
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(script))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", script
    finally:
        server.shutdown()
        server.server_close()


def test_s3_reads_retry_throttling_5xx_and_cut_bodies(stub_s3: tuple[str, _Script]) -> None:
    endpoint, script = stub_s3
    client = s3_client({"endpoint_url": endpoint, "region": "us-east-1"})
    # the defaults: 8 tries of a request in all (the first included), adaptive mode
    assert client.meta.config.retries == {"total_max_attempts": 8, "mode": "adaptive"}
    waits: list[float] = []
    store = S3Store("bkt", "cur", client, sleep=waits.append)
    # throttled (503 SlowDown), or a 5xx: botocore retries with backoff, the next answer is read
    for error in ("SlowDown", "InternalError"):
        script.answers[:] = [error, "ok"]
        script.requests = 0
        assert store.read("x.csv") == BODY
        assert script.requests == 2
    # a body cut off mid-stream is fetched again (after a backoff)
    script.answers[:] = ["cut", "ok"]
    script.requests = 0
    assert store.read("x.csv") == BODY
    assert script.requests == 2
    assert len(waits) == 1
    # always cut: gives up after READ_ATTEMPTS reads, naming the object and the tries
    script.answers[:] = ["cut"]
    script.requests = 0
    with pytest.raises(SourceUnavailable, match=r"s3://bkt/cur/x.csv: .*\(tried 4 times\)"):
        store.read("x.csv")
