"""Slurm from the `sacct` command: one call per day window (a fake `sacct` on PATH prints sample
files and records its arguments), landed through `ingest_source`."""

from __future__ import annotations

import json
import os
import stat
import sys
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest

from fleetledger.config import Config, Source
from ingest.core.errors import IngestError
from ingest.registry import ingest_source
from ingest.scheduler.slurm import DEFAULT_COLUMNS
from ingest.scheduler.slurm_command import run_sacct, sacct_command

FAKE_SACCT = """#!{python}
import json, os, sys
args = sys.argv[1:]
with open(os.environ["FAKE_SACCT_LOG"], "a") as log:
    log.write(json.dumps({{"args": args, "tz": os.environ.get("TZ")}}) + "\\n")
outputs = json.loads(os.environ["FAKE_SACCT_OUTPUTS"])
start = args[args.index("--starttime") + 1] if "--starttime" in args else args[-1]
if start not in outputs:
    sys.stderr.write("sacct: error: no such window " + start + "\\n")
    sys.exit(1)
with open(outputs[start], "rb") as f:
    sys.stdout.buffer.write(f.read())
"""

D1, D2, D3 = date(2015, 6, 28), date(2015, 6, 29), date(2015, 6, 30)


@pytest.fixture
def fake_sacct(tmp_path: Path, samples: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A `sacct` on PATH: day 1 prints the xdmod accounting log, day 2 the array log (with a
    `--parsable2` header line added), day 3 the non-UTF-8 variant; it logs every call."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "sacct"
    exe.write_text(FAKE_SACCT.format(python=sys.executable))
    exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
    header = "|".join(c.capitalize() for c in DEFAULT_COLUMNS) + "\n"
    day2 = tmp_path / "day2.txt"
    day2.write_text(
        header + (samples / "slurm/xdmod-accounting-logs-with-job-arrays.log").read_text()
    )
    day3 = tmp_path / "day3.txt"
    day3.write_bytes(
        (samples / "slurm/xdmod-utf8-multibyte-chars.log")
        .read_bytes()
        .replace(b"\xc3\xa0", b"\xe0")
    )
    outputs = {
        f"{D1}T00:00:00": str(samples / "slurm/xdmod-accounting-logs.log"),
        f"{D2}T00:00:00": str(day2),
        f"{D3}T00:00:00": str(day3),
    }
    log = tmp_path / "calls.jsonl"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("FAKE_SACCT_LOG", str(log))
    monkeypatch.setenv("FAKE_SACCT_OUTPUTS", json.dumps(outputs))
    monkeypatch.setenv("TZ", "Europe/Amsterdam")  # the runner must override it
    return log


def calls(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def test_one_sacct_call_per_day_window(fake_sacct: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    cfg = Config(
        sources=[Source(name="hpc", kind="slurm", location="sacct://", options={"cluster": "ub"})],
        base_dir=tmp_path,
    )
    report = ingest_source(cfg, cfg.sources[0], [D3, D1, D2], home)
    made = calls(fake_sacct)
    assert len(made) == 3  # three days, three calls: never one per job
    assert [c["tz"] for c in made] == ["UTC"] * 3
    fmt = ",".join(DEFAULT_COLUMNS)
    assert made[0]["args"] == [
        "--parsable2",
        "--allusers",
        "--allocations",
        "--duplicates",
        "--format",
        fmt,
        "--starttime",
        "2015-06-28T00:00:00",
        "--endtime",
        "2015-06-29T00:00:00",
    ]
    assert [c["args"][-3] for c in made] == [
        "2015-06-28T00:00:00",
        "2015-06-29T00:00:00",
        "2015-06-30T00:00:00",
    ]
    assert report.partitions == [f"date={d}" for d in (D1, D2, D3)]
    # D3's one line carries a Latin-1 byte (issue 11, finding 9c: quarantined, not replaced)
    assert (report.rows_landed, report.rows_quarantined) == (4 + 6, 1)
    assert report.files_read[0] == "sacct " + " ".join(made[0]["args"])

    def part(d: date) -> pl.DataFrame:
        return pl.read_parquet(home / f"raw/slurm_jobs/hpc/date={d}/part-0.parquet")

    d1 = part(D1)
    assert d1["x_snapshot_date"].unique().to_list() == [D1]
    assert d1["cluster"].unique().to_list() == ["ub"]
    assert d1["gpus"].sum() == 2
    # times are read as UTC (TZ=UTC), whatever the caller's TZ was
    assert d1["start"][0] == datetime(2015, 6, 28, 2, 55, 50, tzinfo=UTC)
    d2 = part(D2)  # the header line was read, not landed
    assert d2.height == 6
    assert d2["x_line_number"].to_list() == [2, 3, 4, 5, 6, 7]
    assert part(D3).height == 0
    q = pl.read_parquet(home / f"raw/quarantine/hpc/date={D3}/part-0.parquet")
    assert q["reason"].to_list() == ["invalid UTF-8 bytes \\xe0 in the line"]
    assert q["raw"].str.contains("a\\xe0b", literal=True).to_list() == [True]
    # a source that declares the encoding of sacct's output lands it
    latin1 = Source(name="hpc", kind="slurm", location="sacct://", options={"encoding": "latin-1"})
    report = ingest_source(cfg, latin1, [D3], tmp_path / "home2")
    assert (report.rows_landed, report.rows_quarantined) == (1, 0)
    landed = pl.read_parquet(tmp_path / f"home2/raw/slurm_jobs/hpc/date={D3}/part-0.parquet")
    assert landed["job_name"].to_list() == ["a\u00e0b"]


def test_command_option_args_and_failures(fake_sacct: Path, tmp_path: Path) -> None:
    opts = {"command": True, "extra_args": "--clusters=ub --state=CD,F"}
    assert sacct_command(D1, opts)[7:9] == ["--clusters=ub", "--state=CD,F"]
    opts = {"args": ["-P", "-X", "-D", "-S", "{start}", "-E", "{end}", "--format", "jobid"]}
    assert sacct_command(D1, opts)[1:] == [
        "-P", "-X", "-D", "-S", "2015-06-28T00:00:00", "-E", "2015-06-29T00:00:00",
        "--format", "jobid",
    ]  # fmt: skip
    assert sacct_command(D1, {"args": ["-P"], "sacct": "/opt/slurm/bin/sacct"}) == [
        "/opt/slurm/bin/sacct",
        "-P",
        "--starttime",
        "2015-06-28T00:00:00",
        "--endtime",
        "2015-06-29T00:00:00",
    ]
    r = run_sacct(D1, source="hpc", options={"command": True, "timezone": "Asia/Tokyo"})
    assert r.rows["start"][0] == datetime(2015, 6, 28, 2, 55, 50, tzinfo=UTC)
    with pytest.raises(IngestError, match="exited with status 1: sacct: error: no such window"):
        run_sacct(date(2015, 7, 1), source="hpc")
    with pytest.raises(IngestError, match="sacct executable not found"):
        run_sacct(D1, source="hpc", options={"sacct": str(tmp_path / "nope")})
    # a failing window lands nothing, not even the days that worked
    home = tmp_path / "home"
    cfg = Config(
        sources=[Source(name="hpc", kind="slurm", location="x", options={"command": True})],
        base_dir=tmp_path,
    )
    with pytest.raises(IngestError):
        ingest_source(cfg, cfg.sources[0], [D1, date(2015, 7, 1)], home)
    assert not (home / "raw/slurm_jobs/hpc").exists()
