"""Faults between boto3 and S3 (issue 11, "Faults"): a fault proxy (tests/faults_proxy.py) in
front of the moto server answers scripted requests with S3's throttling and 5xx errors, resets
connections and cuts bodies short. Retried requests land exactly what a fault-free run lands; a
store down for good fails with the location, the last error and the attempts, and what the
source landed before stays."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from aws_cur_helpers import parquet_rows, s3_source, totals_by_hand, write_config
from faults_proxy import FaultProxy
from test_aws_cur_s3 import DAYS, LOCATION, fresh_bucket, generated  # noqa: F401

from fleetledger.generator.bill_files import EXPORT
from ingest.billing.s3 import MAX_ATTEMPTS, retry_settings, s3_client
from ingest.core.errors import IngestError, SourceUnavailable
from ingest.registry import ingest_source

# columns that hold the time of the landing itself, not anything the source said
LANDING_TIME = {"ingested_at", "computed_at"}
# the faults injected into the faulted run, in the order requests meet them: every kind, six
# faults in all, so the run makes exactly six requests more than the clean one
SCRIPT: list[str | None] = [
    "slowdown",  # 503 SlowDown: S3's throttling answer
    None,
    "internal",  # 500 InternalError
    "reset",  # TCP reset, no answer
    None,
    "unavailable",  # 503 ServiceUnavailable
    "truncated",  # a GET body cut in half
    "slowdown",
]
INJECTED = 6


@pytest.fixture
def proxy(moto_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(moto_endpoint) as p:
        yield p


def landed_tables(home: Path) -> dict[str, pl.DataFrame]:
    """Every parquet file under raw/ (schema files aside), without the landing-time columns,
    rows in a fixed order."""
    out = {}
    for path in sorted((home / "raw").rglob("*.parquet")):
        rel = path.relative_to(home).as_posix()
        if "/_schema/" in rel:
            continue
        frame = pl.read_parquet(path)
        frame = frame.drop([c for c in frame.columns if c in LANDING_TIME])
        out[rel] = frame.sort(frame.columns, nulls_last=True)
    return out


def land(home: Path, endpoint: str, **options: Any) -> Any:
    cfg = write_config(
        home,
        {"sources": [s3_source("aws-cur", LOCATION, endpoint, retry_mode="standard", **options)]},
    )
    return ingest_source(cfg, cfg.source("aws-cur"), DAYS, home)


def test_throttling_5xx_and_resets_are_retried_to_the_clean_result(
    s3: Any,
    moto_endpoint: str,
    proxy: FaultProxy,
    generated: tuple[Path, dict[str, Any]],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    export, _ = generated
    fresh_bucket(s3, export)
    clean = tmp_path / "clean"
    land(clean, proxy.url)  # through the proxy, no fault: the number of requests a run makes
    clean_requests = proxy.requests
    assert proxy.injected == []
    # 2 periods: listing metadata/, then per period its manifest and one data file
    assert clean_requests == 5

    proxy.reset_counts()
    proxy.script(SCRIPT)
    faulted = tmp_path / "faulted"
    report = land(faulted, proxy.url)

    kinds = Counter(i.fault for i in proxy.injected)
    assert kinds == {"slowdown": 2, "internal": 1, "reset": 1, "unavailable": 1, "truncated": 1}
    assert len(proxy.injected) == INJECTED
    # each fault cost one request more: botocore retried each error and reset, the store
    # fetched the cut body again
    assert proxy.requests == clean_requests + INJECTED
    assert report.rows_quarantined == 0

    a, b = landed_tables(clean), landed_tables(faulted)
    assert sorted(a) == sorted(b)
    assert "raw/aws_cur_lines/aws-cur/period=2026-10/part-0.parquet" in a
    for name in a:
        assert a[name].equals(b[name]), name
    # and the landed lines are the file's, by hand (pyarrow rows)
    for period in ("2026-10", "2026-11"):
        src = export / f"data/BILLING_PERIOD={period}" / f"{EXPORT}-00001.snappy.parquet"
        hand = totals_by_hand(parquet_rows(src))
        lines = b[f"raw/aws_cur_lines/aws-cur/period={period}/part-0.parquet"]
        assert lines.height == hand["lines"]
        assert lines["line_item_net_unblended_cost"].sum() == pytest.approx(hand["billed"])


def test_a_store_down_for_good_names_location_error_and_attempts(
    s3: Any,
    moto_endpoint: str,
    proxy: FaultProxy,
    generated: tuple[Path, dict[str, Any]],  # noqa: F811 (the fixture)
    tmp_path: Path,
) -> None:
    export, _ = generated
    fresh_bucket(s3, export)
    home = tmp_path / "home"
    land(home, proxy.url)
    before = {
        p.relative_to(home).as_posix(): p.read_bytes() for p in (home / "raw").rglob("*.parquet")
    }

    proxy.down = True
    proxy.reset_counts()
    with pytest.raises(SourceUnavailable) as info:
        land(home, proxy.url, max_attempts=3)
    err = info.value
    message = str(err)
    assert f"cannot list {LOCATION}/metadata/" in message
    assert "SlowDown" in message and "Please reduce your request rate" in message
    assert "tried 3 times" in message
    assert err.attempts == 3
    # the first request (the listing) was tried 3 times, then the source gave up
    assert proxy.requests == 3 and len(proxy.injected) == 3
    after = {
        p.relative_to(home).as_posix(): p.read_bytes() for p in (home / "raw").rglob("*.parquet")
    }
    assert after == before  # nothing landed, nothing removed

    # connection refused (nothing listens): the same error kind, naming the endpoint
    url = proxy.url
    proxy.stop()
    with pytest.raises(SourceUnavailable, match=r"Could not connect to the endpoint URL.*tried 2"):
        land(home, url, max_attempts=2)


def test_retry_options_configure_botocore() -> None:
    assert retry_settings({}) == (MAX_ATTEMPTS, "adaptive")
    assert MAX_ATTEMPTS == 8
    client = s3_client({"region": "us-east-1", "max_attempts": "3", "retry_mode": "standard"})
    assert client.meta.config.retries == {"total_max_attempts": 3, "mode": "standard"}
    with pytest.raises(IngestError, match=r"max_attempts: 'many' is not a whole number"):
        retry_settings({"max_attempts": "many"})
    with pytest.raises(IngestError, match=r"max_attempts: 0 \(at least 1"):
        retry_settings({"max_attempts": 0})
    with pytest.raises(IngestError, match=r"retry_mode: 'legacy' is not one of adaptive, standard"):
        retry_settings({"retry_mode": "legacy"})
