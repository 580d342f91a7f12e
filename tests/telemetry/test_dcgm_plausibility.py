"""DCGM blank values of every field type are dropped and counted, physically impossible values
are quarantined with the reason, and samples far from their file's day never land (issue 11,
findings 1 and 2), in every file shape that carries the fields."""

from __future__ import annotations

import gzip
import os
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest
from dcgm_write import Sample, write

from ingest.telemetry.dcgm_formats import read_dcgm

T0 = 1790899200000  # 2026-10-02 00:00:00 UTC, ms
DAY = date(2026, 10, 2)
MIN = 60_000
U0 = "GPU-00000000-0000-0000-0000-000000000000"
U1 = "GPU-11111111-1111-1111-1111-111111111111"
G0 = {"gpu": "0", "UUID": U0, "Hostname": "n1", "modelName": "NVIDIA H100 80GB HBM3"}
G1 = {"gpu": "1", "UUID": U1, "Hostname": "n1"}
SHAPES = ["prometheus_text", "openmetrics", "prometheus_range_json", "long_csv", "long_parquet"]

BLANKS: list[Sample] = [
    ("DCGM_FI_DEV_FB_USED", G0, "2147483632", T0),  # DCGM_INT32_BLANK (0x7ffffff0)
    ("DCGM_FI_DEV_FB_FREE", G0, "2147483647", T0),  # 0x7fffffff, the top of the int32 range
    ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", G0, "9223372036854775807", T0),  # int64
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", G0, "140737488355328", T0),  # DCGM_FP64_BLANK
    ("DCGM_FI_DEV_POWER_USAGE", G0, "140737488355331", T0),  # FP64 NOT_PERMISSIONED (+3)
]
#: next to the blank ranges, and at the limits of the physical ones: data
KEPT: list[Sample] = [
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", G0, "2147483631", T0),  # one below the int32 range
    ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", G0, "2147483648", T0 + MIN),  # one above it
    ("DCGM_FI_DEV_POWER_USAGE", G0, "2000", T0 + MIN),
    ("DCGM_FI_DEV_GPU_UTIL", G0, "100", T0 + MIN),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", G0, "1", T0 + MIN),
    ("DCGM_FI_DEV_FB_USED", G0, "81920", T0 + MIN),  # 80 GB = 81920 MiB
    ("DCGM_FI_DEV_FB_USED", G1, "50000", T0 + MIN),  # no model name, no FB_TOTAL: no limit
    ("DCGM_FI_DEV_FB_TOTAL", G1, "40960", T0 + 2 * MIN),
    # XID counts by code (label `xid`, older exporters `err_code`); a zero count naming no code
    ("DCGM_EXP_XID_ERRORS_COUNT", {**G0, "xid": "31"}, "2", T0 + MIN),
    ("DCGM_EXP_XID_ERRORS_COUNT", {**G1, "err_code": "79"}, "1", T0 + MIN),
    ("DCGM_EXP_XID_ERRORS_COUNT", G1, "0", T0 + 2 * MIN),
]
IMPOSSIBLE: list[tuple[Sample, str]] = [
    (
        ("DCGM_FI_DEV_POWER_USAGE", G0, "2000.5", T0 + 2 * MIN),
        "DCGM_FI_DEV_POWER_USAGE = 2000.5 W is outside 0..2000 W (option max_power_w)",
    ),
    (
        ("DCGM_FI_DEV_POWER_USAGE", G0, "-1", T0 + 3 * MIN),
        "DCGM_FI_DEV_POWER_USAGE = -1.0 W is outside 0..2000 W (option max_power_w)",
    ),
    (
        ("DCGM_FI_DEV_GPU_UTIL", G0, "101", T0 + 2 * MIN),
        "DCGM_FI_DEV_GPU_UTIL = 101.0 % is outside 0..100 %",
    ),
    (
        ("DCGM_FI_DEV_GPU_UTIL", G0, "-3", T0 + 3 * MIN),
        "DCGM_FI_DEV_GPU_UTIL = -3.0 % is outside 0..100 %",
    ),
    (
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", G0, "1.5", T0 + 2 * MIN),
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE = 1.5 is outside the ratio range 0..1",
    ),
    (
        ("DCGM_FI_DEV_FB_USED", G0, "81921", T0 + 2 * MIN),
        "DCGM_FI_DEV_FB_USED = 81921.0 MiB exceeds the GPU's memory "
        "(81920 MiB, modelName NVIDIA H100 80GB HBM3)",
    ),
    (
        ("DCGM_FI_DEV_FB_USED", G1, "40961", T0 + 2 * MIN),
        "DCGM_FI_DEV_FB_USED = 40961.0 MiB exceeds the GPU's memory "
        "(40960 MiB, DCGM_FI_DEV_FB_TOTAL)",
    ),
    # an XID count the warehouse cannot read as a code's (its cast would fail the build)
    (
        ("DCGM_EXP_XID_ERRORS_COUNT", {**G0, "xid": "abc"}, "1", T0 + 2 * MIN),
        "DCGM_EXP_XID_ERRORS_COUNT label xid = 'abc' is not an XID code (a whole number)",
    ),
    (
        ("DCGM_EXP_XID_ERRORS_COUNT", {**G1, "err_code": "31.5"}, "1", T0 + 3 * MIN),
        "DCGM_EXP_XID_ERRORS_COUNT label err_code = '31.5' is not an XID code (a whole number)",
    ),
    (
        ("DCGM_EXP_XID_ERRORS_COUNT", G0, "3", T0 + 3 * MIN),
        "DCGM_EXP_XID_ERRORS_COUNT = 3.0 names no XID code (label xid or err_code)",
    ),
]


def _read(fmt: str, samples: list[Sample], tmp_path: Path, **opts: object):
    path = write(fmt, samples, tmp_path / "n1")
    return read_dcgm(path, source="s", options={"format": fmt, **opts}, day=DAY)


@pytest.mark.parametrize("fmt", SHAPES)
def test_every_blank_class_is_dropped_and_counted(fmt: str, tmp_path: Path) -> None:
    r = _read(fmt, BLANKS + KEPT, tmp_path)
    assert r.sentinels_dropped == 5  # the five BLANKS
    assert r.quarantine.height == 0
    assert sorted(r.rows.select("metric", "value").rows()) == sorted(
        (m, float(v)) for m, _, v, _ in KEPT
    )


@pytest.mark.parametrize("fmt", SHAPES)
def test_impossible_values_are_quarantined_with_the_reason(fmt: str, tmp_path: Path) -> None:
    samples = KEPT + [s for s, _ in IMPOSSIBLE]
    r = _read(fmt, samples, tmp_path)
    assert r.rows.height == len(KEPT)
    assert sorted(r.quarantine["reason"]) == sorted(reason for _, reason in IMPOSSIBLE)
    assert r.quarantine["x_source_file"].unique().to_list() == [str(r.files[0])]
    if fmt in ("prometheus_text", "long_csv"):
        # the quarantine keeps the file's line: the power line is line 3 + 11 (2 comments)
        q = r.quarantine.filter(pl.col("reason").str.contains("2000.5"))
        line = q["x_line_number"].item()
        assert line == (14 if fmt == "prometheus_text" else 13)  # CSV: header is line 1
        assert "2000.5" in q["raw"].item()


def test_max_power_w_option(tmp_path: Path) -> None:
    r = _read("prometheus_text", KEPT, tmp_path, max_power_w=700)
    assert r.quarantine["reason"].to_list() == [
        "DCGM_FI_DEV_POWER_USAGE = 2000.0 W is outside 0..700 W (option max_power_w)"
    ]
    assert r.rows.height == len(KEPT) - 1


def test_nvidia_smi_memory_total_and_impossible_values(tmp_path: Path) -> None:
    """nvidia-smi's memory.total is the FB_TOTAL the memory check uses; the power and
    utilisation limits hold there too."""
    path = tmp_path / "n1.csv"
    path.write_text(
        "timestamp, index, uuid, utilization.gpu [%], power.draw [W], memory.used [MiB], "
        "memory.total [MiB]\n"
        f"2026/10/02 00:00:00.000, 0, {U0}, 87 %, 412.50 W, 1000 MiB, 81559 MiB\n"
        f"2026/10/02 00:01:00.000, 0, {U0}, 187 %, 2412.50 W, 91000 MiB, 81559 MiB\n"
    )
    r = read_dcgm(path, source="s", options={"format": "nvidia_smi_csv"}, day=DAY)
    assert sorted(r.quarantine["reason"]) == [
        "DCGM_FI_DEV_FB_USED = 91000.0 MiB exceeds the GPU's memory "
        "(81559 MiB, DCGM_FI_DEV_FB_TOTAL)",
        "DCGM_FI_DEV_GPU_UTIL = 187.0 % is outside 0..100 %",
        "DCGM_FI_DEV_POWER_USAGE = 2412.5 W is outside 0..2000 W (option max_power_w)",
    ]
    assert set(r.quarantine["x_line_number"]) == {3}
    assert r.rows.height == 4 + 1  # line 2's four fields, line 3's memory.total


# ------------------------------------------------------------------ finding 1: far times

GOOD = [("DCGM_FI_DEV_GPU_UTIL", G0, "50", T0 + 12 * 60 * MIN)]  # 2026-10-02 12:00
SERIES = f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{U0}",Hostname="n1"}}'.encode()


def test_a_line_cut_inside_its_timestamp_is_quarantined(tmp_path: Path) -> None:
    """`… 42 1790899` (the timestamp cut after 7 digits) reads as 1970-01-01T00:29:50.899Z."""
    body = gzip.decompress(write("prometheus_text", GOOD, tmp_path / "a").read_bytes())
    cut = body + SERIES + b" 42 1790899"
    path = tmp_path / "n1.prom.gz"
    path.write_bytes(gzip.compress(cut))
    r = read_dcgm(path, source="s", options={}, day=DAY)
    assert r.rows["value"].to_list() == [50.0]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (
            4,
            "sample time 1970-01-01T00:29:50.899Z is outside the file's day 2026-10-02 "
            "(± day_slack_seconds 3600 s)",
        )
    ]
    assert r.quarantine["raw"].item().endswith("} 42 1790899")


def test_a_line_cut_after_its_value_does_not_take_a_late_mtime(tmp_path: Path) -> None:
    """A line without its timestamp takes the file's mtime; an mtime two days after the file's
    day quarantines it, with the time it would have had."""
    body = gzip.decompress(write("prometheus_text", GOOD, tmp_path / "a").read_bytes())
    cut = body + SERIES + b" 42"
    path = tmp_path / "n1.prom.gz"
    path.write_bytes(gzip.compress(cut))
    late = datetime(2026, 10, 4, 6, 0, tzinfo=UTC).timestamp()
    os.utime(path, (late, late))
    r = read_dcgm(path, source="s", options={}, day=DAY)
    assert r.rows["value"].to_list() == [50.0]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (
            4,
            "sample has no timestamp and the file's time 2026-10-04T06:00:00+00:00 (option "
            "scrape_time, else the file's mtime) is outside the file's day "
            "(2026-10-01T23:00:00+00:00 .. 2026-10-03T01:00:00+00:00)",
        )
    ]
    # an mtime within the day (a scrape file written as it was scraped) is the sample's time
    inside = datetime(2026, 10, 2, 18, 0, tzinfo=UTC).timestamp()
    os.utime(path, (inside, inside))
    r = read_dcgm(path, source="s", options={}, day=DAY)
    assert r.quarantine.height == 0
    assert r.rows["time"].to_list()[-1] == datetime(2026, 10, 2, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize("fmt", SHAPES)
def test_day_slack(fmt: str, tmp_path: Path) -> None:
    """The file of 2026-10-02 holds 23:00 the day before up to (not including) 01:00 the day
    after; `day_slack_seconds: 0` allows the day alone."""
    edge = [
        ("DCGM_FI_DEV_GPU_UTIL", G0, "1", T0 - 60 * MIN),  # 2026-10-01T23:00: kept
        ("DCGM_FI_DEV_GPU_UTIL", G0, "2", T0 - 60 * MIN - 1),  # a ms earlier: out
        ("DCGM_FI_DEV_GPU_UTIL", G0, "3", T0 + 25 * 60 * MIN - 1),  # 2026-10-03T00:59:59.999
        ("DCGM_FI_DEV_GPU_UTIL", G0, "4", T0 + 25 * 60 * MIN),  # 2026-10-03T01:00: out
    ]
    r = _read(fmt, edge, tmp_path)
    assert sorted(r.rows["value"]) == [1.0, 3.0]
    assert r.quarantine.height == 2
    strict = _read(fmt, edge, tmp_path, day_slack_seconds=0)
    assert strict.rows.height == 0
    assert strict.quarantine.height == 4
    # no day (a whole file): nothing is checked here, the landing keeps the requested days
    whole = read_dcgm(write(fmt, edge, tmp_path / "w"), source="s", options={"format": fmt})
    assert whole.rows.height == 4
