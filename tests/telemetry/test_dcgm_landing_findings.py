"""What landing a DCGM day reports (issue 11, findings 2, 8 and 9): duplicates dropped and
counted per file with `hpc_job` and pod in the key, empty files as gaps, blank values as `info`."""

from __future__ import annotations

import gzip
import shutil
from datetime import date
from pathlib import Path

import polars as pl
from dcgm_write import Sample, text

from fleetledger.config import Config, Source
from ingest.core.findings import IngestFinding
from ingest.registry import ingest_source

T0 = 1790899200000  # 2026-10-02 00:00:00 UTC, ms
DAY = date(2026, 10, 2)
U0 = "GPU-00000000-0000-0000-0000-000000000000"
G0 = {"gpu": "0", "UUID": U0, "Hostname": "n1"}
#: one GPU shared by two jobs: dcgm-exporter repeats each sample once per job
SHARED: list[Sample] = [
    ("DCGM_FI_DEV_GPU_UTIL", {**G0, "hpc_job": "101"}, "40", T0),
    ("DCGM_FI_DEV_GPU_UTIL", {**G0, "hpc_job": "102"}, "40", T0),
    ("DCGM_FI_DEV_GPU_UTIL", {**G0, "hpc_job": "101"}, "50", T0 + 60_000),
    ("DCGM_FI_DEV_GPU_UTIL", {**G0, "hpc_job": "102"}, "50", T0 + 60_000),
    ("DCGM_FI_DEV_GPU_UTIL", {**G0, "pod": "a"}, "7", T0 + 60_000),
    ("DCGM_FI_DEV_GPU_UTIL", {**G0, "pod": "b"}, "7", T0 + 60_000),
]


def _land(tmp_path: Path, files: dict[str, bytes], location: str = "d/{date}/*.prom.gz"):
    for name, data in files.items():
        p = tmp_path / "d" / DAY.isoformat() / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    cfg = Config(base_dir=tmp_path, sources=[Source(name="s", kind="dcgm", location=location)])
    report = ingest_source(cfg, cfg.sources[0], [DAY], tmp_path / "home")
    landed = pl.read_parquet(tmp_path / "home/raw/dcgm_samples/s/date=2026-10-02/*.parquet")
    return report, landed


def _findings(report, check: str) -> list[IngestFinding]:  # type: ignore[no-untyped-def]
    return [f for f in report.findings if f.check == check]


def test_the_same_file_twice_lands_once(tmp_path: Path) -> None:
    data = gzip.compress(text(SHARED))
    report, landed = _land(tmp_path, {"n1.prom.gz": data, "n1-again.prom.gz": data})
    # every job's and pod's sample once: 6 rows, not 12, and not 3
    assert landed.height == report.rows_landed == 6
    assert sorted(landed["hpc_job"].drop_nulls()) == ["101", "101", "102", "102"]
    assert set(landed["x_source_file"].map_elements(lambda f: Path(f).name, pl.String)) == {
        "n1-again.prom.gz"  # sorted first: the first copy wins
    }
    [dup] = _findings(report, "duplicate_samples")
    second = tmp_path / "d/2026-10-02/n1.prom.gz"
    assert (dup.severity, dup.day, dup.count) == ("info", DAY, 6)
    assert dup.message == (
        "6 duplicate rows for 2026-10-02 dropped (the same key again: a file delivered twice or "
        f"overlapping scrapes; the first is kept): {second} (6)"
    )


def test_overlapping_scrapes_with_another_value_warn(tmp_path: Path) -> None:
    """An overlap of one sample (job 102 at T0) with a different value, and a repeat inside
    the file itself: 2 dropped, one of them with another value → a warning."""
    first = gzip.compress(text(SHARED[:2]))
    overlap = [("DCGM_FI_DEV_GPU_UTIL", {**G0, "hpc_job": "102"}, "41", T0), *SHARED[2:3] * 2]
    report, landed = _land(
        tmp_path, {"a.prom.gz": first, "b.prom.gz": gzip.compress(text(overlap))}
    )
    assert landed.sort("time", "hpc_job").select("hpc_job", "value").rows() == [
        ("101", 40.0),
        ("102", 40.0),  # the first file's value is kept
        ("101", 50.0),
    ]
    [dup] = _findings(report, "duplicate_samples")
    assert (dup.severity, dup.count) == ("warning", 2)
    assert "; 1 of them with another value than the sample kept:" in dup.message


def test_duplicates_of_a_whole_file_location(tmp_path: Path) -> None:
    data = gzip.compress(text(SHARED))
    report, landed = _land(
        tmp_path, {"n1.prom.gz": data, "n2.prom.gz": data}, location="d/*/*.prom.gz"
    )
    assert landed.height == 6
    [dup] = _findings(report, "duplicate_samples")
    assert (dup.severity, dup.day, dup.count) == ("info", None, 6)


def test_an_empty_file_is_a_gap_not_a_failure(tmp_path: Path) -> None:
    """A 0-byte file and a file of comments only: a `warning` each, for the day; the other
    file's samples land."""
    report, landed = _land(
        tmp_path,
        {
            "n0.prom.gz": b"",
            "n1.prom.gz": gzip.compress(b"# HELP DCGM_FI_DEV_GPU_UTIL x\n# TYPE x gauge\n"),
            "n2.prom.gz": gzip.compress(text(SHARED)),
        },
    )
    assert landed.height == 6
    empty = _findings(report, "empty_file")
    assert [(f.severity, f.day, f.count) for f in empty] == [("warning", DAY, 1)] * 2
    assert [Path(f.message.split(":")[0]).name for f in empty] == ["n0.prom.gz", "n1.prom.gz"]


def test_blank_values_are_an_info_finding(tmp_path: Path) -> None:
    blanks: list[Sample] = [
        ("DCGM_FI_DEV_FB_USED", G0, "2147483632", T0),
        ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", G0, "140737488355328", T0),
        ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", G0, "9223372036854775807", T0),
    ]
    report, landed = _land(tmp_path, {"n1.prom.gz": gzip.compress(text(SHARED + blanks))})
    assert landed.height == 6
    assert report.sentinels_dropped == 3
    [f] = _findings(report, "blank_values_dropped")
    assert (f.severity, f.day, f.count) == ("info", DAY, 3)
    assert not _findings(report, "empty_file")


def test_a_file_of_blanks_only_is_not_empty(tmp_path: Path) -> None:
    """The exporter ran and said "no reading": not a gap in the telemetry."""
    blank: list[Sample] = [("DCGM_FI_DEV_FB_USED", G0, "2147483632", T0)]
    report, _ = _land(tmp_path, {"n1.prom.gz": gzip.compress(text(blank))})
    assert not _findings(report, "empty_file")
    shutil.rmtree(tmp_path / "home")
