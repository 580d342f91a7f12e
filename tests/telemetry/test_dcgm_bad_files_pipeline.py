"""Bad DCGM files change no number (issue 11, findings 1, 8 and 9): one pipeline run over a
small generated fleet (2 days; 2 AWS, 1 GKE, 2 on-prem nodes; a scrape every 300 s) whose
files were damaged independently, each on its own host-day:

- aws-p5-01, 2026-10-02: a copy of the last line cut inside its timestamp (`… 0 1790985`, read
  as 1970-01-01T00:29:50.985Z) — finding 1;
- aws-p5-02, 2026-10-03: a copy of the last line cut after its value (no timestamp: it would
  take the file's mtime), the file's mtime set to 2026-10-06, after `--end` — finding 1;
- dgx-02, 2026-10-02: a 0-byte file — finding 8;
- aws-p5-01, 2026-10-03: the file delivered twice (a second name, the same bytes), and the GKE
  node's 2026-10-03 file joined by an overlapping scrape (its first 2,000 lines again) —
  finding 9.

The generator's ground truth is what the undamaged fleet gives (exactly: this fleet's marts
equal it to the second), so every GPU-day but dgx-02's empty one must equal it, and so must
every run that did not run on dgx-02.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pytest

from fleetledger.generator import generate
from fleetledger.pipeline import PipelineResult, run_pipeline

pytestmark = pytest.mark.warehouse

START = date(2026, 10, 2)
END = START + timedelta(days=1)
STATES = ("busy", "allocated_idle", "unallocated", "down", "unobserved")
GPUS = 5 * 8
LATE = datetime(2026, 10, 6, 12, 0, tzinfo=UTC)


def _rewrite(path: Path, change) -> None:  # type: ignore[no-untyped-def]
    mtime = path.stat().st_mtime
    path.write_bytes(gzip.compress(change(gzip.decompress(path.read_bytes()))))
    os.utime(path, (mtime, mtime))


def _last_line(text: bytes) -> bytes:
    return text.rstrip(b"\n").rsplit(b"\n", 1)[1]


Damaged = tuple[Path, dict, PipelineResult]


@pytest.fixture(scope="module")
def damaged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Damaged]:
    home = tmp_path_factory.mktemp("dcgm_damaged")
    truth = generate(
        home, days=2, seed=1, start=START, scrape_interval_s=300, aws_nodes=2, gcp_nodes=1,
        onprem_nodes=2,
    )  # fmt: skip
    src = home / "sources"
    # finding 1: a line cut inside its timestamp (13 digits → 7)
    _rewrite(
        src / "aws/dcgm/2026-10-02/aws-p5-01.prom.gz",
        lambda t: t + _last_line(t)[:-6] + b"\n",
    )
    # finding 1: a line cut after its value, in a file last written after --end
    late = src / "aws/dcgm/2026-10-03/aws-p5-02.prom.gz"
    _rewrite(late, lambda t: t + _last_line(t).rsplit(b" ", 1)[0] + b"\n")
    os.utime(late, (LATE.timestamp(), LATE.timestamp()))
    # finding 8: a 0-byte file
    (src / "onprem/dcgm/2026-10-02/dgx-02.prom.gz").write_bytes(b"")
    # finding 9: the same file twice, and an overlapping scrape
    twice = src / "aws/dcgm/2026-10-03/aws-p5-01.prom.gz"
    shutil.copy2(twice, twice.with_name("aws-p5-01-again.prom.gz"))
    gke = next((src / "gcp/dcgm/2026-10-03").glob("*.prom.gz"))
    head = b"\n".join(gzip.decompress(gke.read_bytes()).split(b"\n")[:2000]) + b"\n"
    gke.with_name(gke.name.replace(".prom.gz", "-overlap.prom.gz")).write_bytes(gzip.compress(head))
    result = run_pipeline(home, START, END)
    yield home, truth, result
    shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def con(damaged: tuple[Path, dict, PipelineResult]) -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect(str(damaged[0] / "warehouse.duckdb"), read_only=True)
    c.execute("set TimeZone = 'UTC'")
    yield c
    c.close()


def test_no_day_is_invented(con: duckdb.DuckDBPyConnection) -> None:
    """40 GPUs × 48 hours of the two days, nothing in 1970 or on 2026-10-06; no cost day
    outside them."""
    n, lo, hi = con.execute("select count(*), min(hour), max(hour) from fct_gpu_hours").fetchone()  # type: ignore[misc]
    assert n == GPUS * 48
    assert (lo, hi) == (
        datetime(2026, 10, 2, tzinfo=UTC),
        datetime(2026, 10, 3, 23, tzinfo=UTC),
    )
    days = {r[0] for r in con.execute("select distinct day from fct_daily_spend").fetchall()}
    assert days == {START, END}
    outside = con.execute(
        "select count(*) from fct_billing "
        "where ChargePeriodStart < '2026-10-02' or ChargePeriodStart >= '2026-10-04'"
    ).fetchone()
    assert outside == (0,)


def test_the_cut_lines_are_quarantined_with_file_and_reason(
    damaged: tuple[Path, dict, PipelineResult], con: duckdb.DuckDBPyConnection
) -> None:
    home = damaged[0]
    landed = duckdb.sql(
        f"select x_source, x_source_file, reason from read_parquet("
        f"'{home}/raw/quarantine/*-dcgm/*/*.parquet', hive_partitioning = false) order by 1, 2"
    ).fetchall()
    assert [(s, Path(f).name, r.split(" (")[0]) for s, f, r in landed] == [
        ("aws-dcgm", "aws-p5-01.prom.gz", "sample time 1970-01-01T00:29:50.985Z is outside the "
         "file's day 2026-10-02"),
        ("aws-dcgm", "aws-p5-02.prom.gz", "sample has no timestamp and the file's time "
         "2026-10-06T12:00:00+00:00"),
    ]  # fmt: skip
    rows = con.execute(
        "select source, sum(rows) from fct_quarantine where source = 'aws-dcgm' group by 1"
    ).fetchall()
    assert rows == [("aws-dcgm", 2)]


def test_gpu_days_equal_the_undamaged_truth(
    damaged: tuple[Path, dict, PipelineResult], con: duckdb.DuckDBPyConnection
) -> None:
    """Every GPU-day equals the truth, the duplicated ones included; dgx-02's day with an
    empty file is unobserved (8 GPUs × 86,400 s), not down."""
    truth = damaged[1]
    got = {
        (r[0], r[1]): r[2:]
        for r in con.execute(
            "select gpu_uuid, cast(cast(hour as date) as varchar), sum(busy_seconds), "
            "sum(allocated_idle_seconds), sum(unallocated_seconds), sum(down_seconds), "
            "sum(unobserved_seconds) from fct_gpu_hours group by 1, 2"
        ).fetchall()
    }
    empty = [d for d in truth["gpu_days"] if (d["host"], d["day"]) == ("dgx-02", "2026-10-02")]
    assert len(empty) == 8
    for d in empty:
        g = dict(zip(STATES, got[(d["gpu_uuid"], d["day"])], strict=True))
        assert g["down"] == 0
        assert g["unobserved"] == 86400
    # the day after: the seconds before its first scrape, which the empty day's last sample
    # would have covered, are unobserved (held: busy as well, as the truth has them)
    day2 = damaged[0] / "sources/onprem/dcgm/2026-10-03/dgx-02.prom.gz"
    first_ms = min(
        int(line.rsplit(b" ", 1)[1])
        for line in gzip.decompress(day2.read_bytes()).splitlines()
        if line and not line.startswith(b"#")
    )
    lead = (first_ms - 1790985600000) / 1000  # after 2026-10-03T00:00:00Z
    assert 0 < lead < 300
    others = [d for d in truth["gpu_days"] if d not in empty]
    assert len(others) == GPUS * 2 - 8
    for d in others:
        g = got[(d["gpu_uuid"], d["day"])]
        want = tuple(d[f"{s}_seconds"] for s in STATES)
        if (d["host"], d["day"]) == ("dgx-02", "2026-10-03"):
            want = (*want[:4], want[4] + lead)
        assert g == pytest.approx(want, abs=1e-6), (d["host"], d["gpu_index"], d["day"])


def test_runs_off_the_empty_host_equal_the_truth(
    damaged: tuple[Path, dict, PipelineResult], con: duckdb.DuckDBPyConnection
) -> None:
    truth = damaged[1]
    got = dict(con.execute("select run_id, cost from fct_run_costs").fetchall())
    runs = [r for r in truth["runs"] if "dgx-02" not in r["hosts"]]
    assert len(runs) >= 10
    for r in runs:
        assert got[r["run_id"]] == pytest.approx(r["cost"], rel=1e-9, abs=1e-6), r["run_id"]


def test_findings_name_the_gap_and_the_duplicates(
    damaged: tuple[Path, dict, PipelineResult],
) -> None:
    """The run passes; what was dropped is reported per source and day."""
    home, _, result = damaged
    assert result.published == home / "warehouse.duckdb"
    log = result.log_path.read_text()
    assert "no DCGM samples in the file for 2026-10-02" in log
    twice = home / "sources/aws/dcgm/2026-10-03/aws-p5-01-again.prom.gz"
    n_twice = sum(
        1 for line in gzip.decompress(twice.read_bytes()).splitlines() if not line.startswith(b"#")
    )
    assert f"{n_twice} duplicate rows for 2026-10-03 dropped" in log
    # the copy sorts first (`-` before `.`) and is kept: the original file holds the repeats
    assert f"{twice.with_name('aws-p5-01.prom.gz')} ({n_twice})" in log
    meta = json.dumps(result.ingest["aws-dcgm"])
    assert "aws-dcgm" in meta
