"""The Cornell BioHPC hourly GPU rollups (samples/power/*.tsv) read into `node_gpu_power_hourly`:
exact row counts, first/last hours and sums checked against the csv module's reading of the
same file."""

from __future__ import annotations

import csv
import gzip
import math
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.telemetry.power import read_power
from ingest.telemetry.power_rollup import parse_rollup, read_node_gpu_rollup

ROLLUP = {"format": "node_gpu_rollup"}
GPU08 = "power/cornell-biohpc-cbsugpu08-hourly-gpu-power-util-first2000.tsv"
GPU09 = "power/cornell-biohpc-cbsugpu09-hourly-gpu-power-util-full.tsv"


def csv_rows(path: Path) -> list[dict[str, str]]:
    """The data rows of an export, by the csv module: BOM stripped, footer lines dropped."""
    with path.open(encoding="utf-8-sig", newline="") as f:
        reader = csv.DictReader(f, delimiter="\t")
        return [r for r in reader if r["timestamp"] is not None and r["powerave"] is not None]


def hour(text: str) -> datetime:
    return datetime.strptime(text, "%Y-%m-%d %H:%M:%S.%f").replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("name", "rows", "first", "last", "power_ave_sum"),
    [
        (GPU08, 2000, datetime(2025, 7, 29, 2, tzinfo=UTC), datetime(2025, 10, 20, 14, tzinfo=UTC),
         319109.70125),
        (GPU09, 8497, datetime(2024, 10, 31, 14, tzinfo=UTC), datetime(2025, 10, 31, 9, tzinfo=UTC),
         633483.7625),
    ],
)  # fmt: skip
def test_rollup_samples_exact(
    samples: Path, name: str, rows: int, first: datetime, last: datetime, power_ave_sum: float
) -> None:
    path = samples / name
    expected = csv_rows(path)
    assert len(expected) == rows
    r = read_power(path, source="cornell", options=ROLLUP)
    assert r.rows.schema == polars_schema("node_gpu_power_hourly")
    assert r.quarantine.height == 0
    assert r.rows.height == rows
    # the export is newest first; landed rows are sorted by host and time
    assert r.rows["time"].is_sorted()
    assert (r.rows["time"][0], r.rows["time"][-1]) == (first, last)
    assert (hour(expected[-1]["timestamp"]), hour(expected[0]["timestamp"])) == (first, last)
    assert math.fsum(r.rows["power_avg_w"]) == math.fsum(float(e["powerave"]) for e in expected)
    assert math.fsum(r.rows["power_avg_w"]) == pytest.approx(power_ave_sum, abs=1e-6)
    for ours, theirs in [
        ("power_min_w", "powermin"),
        ("power_max_w", "powermax"),
        ("temp_avg_c", "tempave"),
        ("util_avg", "utilave"),
        ("util_max", "utilmax"),
        ("gmem_avg", "gmemave"),
    ]:
        assert math.fsum(r.rows[ours]) == math.fsum(float(e[theirs]) for e in expected), ours
    # every row keeps its line in the file: the header is line 1, the newest row line 2
    newest = r.rows.filter(pl.col("time") == last).row(0, named=True)
    assert newest["x_line_number"] == 2
    assert newest["power_avg_w"] == float(expected[0]["powerave"])
    assert r.rows["host"].unique().to_list() == [expected[0]["name"]]
    assert set(r.rows["interval_seconds"]) == {3600}


def test_sql_server_footer_is_tolerated_and_counted(samples: Path) -> None:
    r = read_node_gpu_rollup(samples / GPU09, source="cornell")
    assert r.warnings == [
        f"{samples / GPU09}: 2 footer lines skipped (not data): (8497 rows affected); "
        "Completion time: 2025-10-31T10:37:15.7213492-04:00"
    ]
    r = read_node_gpu_rollup(samples / GPU08, source="cornell")
    assert r.warnings == []  # the truncated copy has no footer


def test_truncated_export_and_bad_rows(samples: Path, tmp_path: Path) -> None:
    lines = (samples / GPU09).read_bytes().split(b"\n")
    header, data = lines[0], lines[1:6]
    bad = [
        b"cbsugpu09\t2025-10-31 03:00:00.000\tn/a\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11",
        b"\t2025-10-31 02:00:00.000\t1\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11",
        b"cbsugpu09\tyesterday\t1\t1\t2\t3\t4\t5\t6\t7\t8\t9\t10\t11",
        b"cbsugpu09\t2025-10-31 01:00:00.000\t1\t1",
        data[0],  # the same host and hour again
    ]
    footer = [b"", b"(9 rows affected)", b"", b"Completion time: 2025-10-31T10:37:15-04:00", b""]
    f = tmp_path / "rollup.tsv.gz"
    f.write_bytes(gzip.compress(b"\n".join([header, *data, *bad, *footer])))
    r = read_node_gpu_rollup(f, source="cornell")
    assert r.rows.height == 5
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (7, "not a number in power_avg_w"),
        (8, "empty host"),
        (9, "unparseable timestamp yesterday"),
        (10, "expected 14 fields, found 4"),
        (11, "duplicate row for this host and time"),
    ]
    assert r.warnings[1] == f"{f}: the footer says 9 rows, the file holds 10"


def test_header_mapping_timezone_and_csv(tmp_path: Path) -> None:
    text = (
        "Node,Hour,GPU Util Avg,Power Ave,Power Max\n"
        "n1,2024-03-10 01:00:00,50,300.5,350\n"
        "n1,2024-03-10 03:00:00,0.5,80,90\n"
    )
    r = parse_rollup(
        text.encode(), source="s", file="f.csv", options={"timezone": "America/New_York"}
    )
    assert r.rows.select("host", "time", "power_avg_w", "power_max_w", "util_avg").rows() == [
        ("n1", datetime(2024, 3, 10, 6, tzinfo=UTC), 300.5, 350.0, 50.0),
        ("n1", datetime(2024, 3, 10, 7, tzinfo=UTC), 80.0, 90.0, 0.5),  # after the DST jump
    ]
    assert r.rows["power_min_w"].null_count() == 2
    with pytest.raises(IngestError, match=r"rollup header lacks \['power_avg_w'\]"):
        parse_rollup(b"name,timestamp,watts\nn1,2024-01-01 00:00,1\n", source="s", file="f")
    r = parse_rollup(
        b"name,timestamp,watts\nn1,2024-01-01 00:00,1\n",
        source="s",
        file="f",
        options={"columns": {"power_avg_w": "Watts"}},
    )
    assert r.rows["power_avg_w"].to_list() == [1.0]
    # a duplicate is judged among the good rows: a rejected row does not shadow the next one
    text = b"name\ttimestamp\tpowerave\nn1\t2024-01-01 00:00\tx\nn1\t2024-01-01 00:00\t5\n"
    r = parse_rollup(text + b"n1\t2024-01-01 00:00\t6\n", source="s", file="f")
    assert r.rows.select("power_avg_w", "x_line_number").rows() == [(5.0, 3)]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (2, "not a number in power_avg_w"),
        (4, "duplicate row for this host and time"),
    ]
    with pytest.raises(IngestError, match="power format 'xml' is not supported"):
        read_power(tmp_path / "x", source="s", options={"format": "xml"})
