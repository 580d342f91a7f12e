"""Re-runs and a source that is down, through the whole pipeline (issue 11, "Idempotency" and
"Faults").

The smallest fleet the generator makes (2 AWS, 1 GKE, 2 on-prem nodes), over two days across a
month end (2026-10-31 and 2026-11-01: the AWS bill has two billing periods), with its AWS CUR
export on S3 (the moto server, behind the fault proxy of tests/faults_proxy.py) and every other
source local:

- a clean run over both days, then the same run again: every mart identical;
- another home: the first day with S3 down for good (every request answered 503 SlowDown):
  the run fails naming the source, location, last error and tries, but every other source is
  built and published; the next day's run, with S3 back, lands the October bill the first run
  missed too, and its marts equal the clean run's.

Four pipeline runs in all.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import polars as pl
import pytest
import yaml
from aws_cur_helpers import make_bucket, s3_source, upload_folder
from faults_proxy import FaultProxy
from mart_compare import compare_marts, read_marts

from fleetledger.generator import generate
from fleetledger.pipeline import PipelineError, PipelineResult, run_pipeline
from ingest.core.missed import missed_path, read_missed

OCT31, NOV1 = date(2026, 10, 31), date(2026, 11, 1)
BUCKET = "fleet-faults"
LOCATION = f"s3://{BUCKET}/cur/fleet-cur"
FLEET = {"days": 2, "seed": 1, "aws_nodes": 2, "gcp_nodes": 1, "onprem_nodes": 2}
TRIES = 2  # max_attempts of the S3 source: a failing request is given up after 2 tries


@pytest.fixture(scope="module")
def proxy(moto_endpoint: str) -> Iterator[FaultProxy]:
    with FaultProxy(moto_endpoint) as p:
        yield p


@pytest.fixture(scope="module")
def fleet(s3: Any, proxy: FaultProxy, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The generated fleet, its CUR export moved to S3 (read through the proxy)."""
    home = tmp_path_factory.mktemp("faults_fleet")
    generate(home, start=OCT31, scrape_interval_s=300, **FLEET)
    make_bucket(s3, BUCKET)
    export = home / "sources/aws/cur/fleet-cur"
    upload_folder(s3, export, BUCKET, "cur/fleet-cur")
    shutil.rmtree(export)
    doc = yaml.safe_load((home / "fleetledger.yml").read_text())
    (aws,) = [s for s in doc["sources"] if s["kind"] == "aws_cur"]
    aws.clear()
    aws.update(s3_source("aws-cur", LOCATION, proxy.url, retry_mode="standard", max_attempts=TRIES))
    (home / "fleetledger.yml").write_text(yaml.safe_dump(doc, sort_keys=False))
    return home


def copy_of(fleet: Path, tmp_path_factory: pytest.TempPathFactory, name: str) -> Path:
    home = tmp_path_factory.mktemp(name)
    shutil.copytree(fleet, home, dirs_exist_ok=True)
    return home


def marts_of(home: Path, result: PipelineResult) -> dict[str, pl.DataFrame]:
    """Every mart as published; of the data-health history, the rows of this run."""
    assert result.published is not None
    return read_marts(result.published, home, run_id=result.run_id)


@pytest.fixture(scope="module")
def clean(
    fleet: Path, proxy: FaultProxy, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, dict[str, pl.DataFrame]]:
    """A fault-free run over both days: its home and its marts."""
    proxy.down = False
    home = copy_of(fleet, tmp_path_factory, "clean")
    result = run_pipeline(home, OCT31, NOV1)
    return home, marts_of(home, result)


def test_rerunning_the_same_days_gives_identical_marts(
    clean: tuple[Path, dict[str, pl.DataFrame]], proxy: FaultProxy
) -> None:
    home, before = clean
    proxy.down = False
    second = run_pipeline(home, OCT31, NOV1)
    after = marts_of(home, second)
    problems, worst = compare_marts(before, after)
    assert problems == [], "\n".join(problems)
    assert worst <= 1e-9
    # the comparison saw real marts, with rows
    assert {"fct_billing", "fct_gpu_hours", "fct_runs", "dim_gpus"} <= set(after)
    assert after["fct_gpu_hours"].height > 0 and after["fct_billing"].height > 0
    # the history keeps one set of findings per run; the latest run's equal the first's
    con = duckdb.connect(str(second.published), read_only=True)
    try:
        runs = con.execute("select count(distinct run_id) from fct_data_health").fetchone()
    finally:
        con.close()
    assert runs is not None and runs[0] in (0, 2)


def spend(warehouse: Path) -> dict[str, float]:
    """Billed cost by bill source."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute(
            "select x_source, sum(x_billed_cost_reporting) from fct_billing group by 1"
        ).fetchall()
    finally:
        con.close()
    return {str(p): float(c) for p, c in rows}


def test_a_source_down_for_good_fails_alone_and_the_next_run_catches_up(
    fleet: Path,
    clean: tuple[Path, dict[str, pl.DataFrame]],
    proxy: FaultProxy,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    _, clean_marts = clean
    home = copy_of(fleet, tmp_path_factory, "recovering")

    # day 1: S3 answers every request 503 SlowDown
    proxy.down = True
    proxy.reset_counts()
    with pytest.raises(PipelineError) as info:
        run_pipeline(home, OCT31, OCT31)
    proxy.down = False
    message = str(info.value)
    assert "asset raw/aws-cur failed" in message
    assert f"source aws-cur (aws_cur, location {LOCATION}) is unavailable" in message
    assert "SlowDown" in message and f"tried {TRIES} times" in message
    assert "landed data was kept" in message
    assert "the other sources were built and published" in message
    assert len(info.value.failures) == 1  # nothing else failed
    # the first request (listing the manifests) was tried TRIES times, then given up
    assert proxy.requests == TRIES and len(proxy.injected) == TRIES

    # ... and every other source was built and published for the day
    published = home / "warehouse.duckdb"
    assert published.exists()
    billed = spend(published)
    assert "aws-cur" not in billed and billed.get("gcp-billing", 0.0) > 0
    con = duckdb.connect(str(published), read_only=True)
    try:
        hours = dict(
            con.execute("select provider, count(*) from fct_gpu_hours group by 1").fetchall()
        )
    finally:
        con.close()
    assert set(hours) == {"aws", "gcp", "onprem"}  # the AWS node's telemetry is not S3's
    owed = read_missed(home, "aws-cur")
    assert owed is not None and owed.days == [OCT31]
    assert "SlowDown" in owed.error

    # day 2, S3 back: the run lands October (owed) and November, and equals the clean run
    result = run_pipeline(home, NOV1, NOV1)
    assert not missed_path(home, "aws-cur").exists()
    assert result.ingest["aws-cur"]["partitions_count"] == 2  # period=2026-10 and 2026-11
    problems, worst = compare_marts(clean_marts, marts_of(home, result))
    assert problems == [], "\n".join(problems)
    assert worst <= 1e-9
    assert spend(published).get("aws-cur", 0.0) > 0
