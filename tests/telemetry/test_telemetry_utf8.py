"""Telemetry text with bytes that are not UTF-8 is never decoded silently (issue 11, finding 9):
the rows on those lines are quarantined naming the line and showing the bytes escaped, the other
lines land; a JSON document with such bytes is an error naming the file and the line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from ingest.core.errors import IngestError
from ingest.telemetry.dcgm_formats import read_dcgm
from ingest.telemetry.power import read_power

UUID = "GPU-00000000-0000-0000-0000-000000000000"
LABELS = f'gpu="0",UUID="{UUID}",Hostname="n1"'
T = 1790899200000  # 2026-10-02 00:00:00 UTC, ms


def _prom(bad: bytes) -> bytes:
    return (
        b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        + f"DCGM_FI_DEV_GPU_UTIL{{{LABELS}}} 40 {T}\n".encode()
        + b'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-1",Hostname="n1",modelName="H'
        + bad
        + f'"}} 50 {T}\n'.encode()
        + f"DCGM_FI_DEV_POWER_USAGE{{{LABELS}}} 300 {T}\n".encode()
    )


@pytest.mark.parametrize("compressed", [False, True])
def test_prometheus_text_line_with_latin1_bytes_is_quarantined(
    tmp_path: Path, compressed: bool
) -> None:
    data = _prom(b"\xe9")  # "é" in latin-1: not UTF-8
    path = tmp_path / "scrape.prom"
    path.write_bytes(gzip.compress(data) if compressed else data)
    res = read_dcgm(path, source="d", options={"format": "prometheus_text"})
    # lines 2 and 4 land; line 3 (the one with the byte) is quarantined, nothing replaced
    assert sorted(res.rows["x_line_number"].to_list()) == [2, 4]
    assert res.quarantine["x_line_number"].to_list() == [3]
    reason = res.quarantine["reason"][0]
    assert reason == "line 3: invalid UTF-8 bytes \\xe9 in the line"
    assert "\\xe9" in res.quarantine["raw"][0]
    assert not any("\ufffd" in str(v) for v in res.rows.to_dicts())


def test_power_csv_line_with_invalid_bytes_is_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "power.csv"
    path.write_bytes(
        b"timestamp,site,meter,kind,kw\n"
        b"2026-10-02T00:00:00Z,dc1,main,facility,120.5\n"
        b"2026-10-02T00:00:00Z,dc1,ups\xff,it,100.0\n"
    )
    res = read_power(path, source="p", options={})
    assert res.rows.height == 1 and res.rows["x_line_number"].to_list() == [2]
    assert res.quarantine["x_line_number"].to_list() == [3]
    assert res.quarantine["reason"][0] == "line 3: invalid UTF-8 bytes \\xff in the line"


def test_long_csv_line_with_invalid_bytes_is_quarantined(tmp_path: Path) -> None:
    path = tmp_path / "long.csv"
    path.write_bytes(
        b"timestamp,host,gpu,uuid,metric,value\n"
        + f"2026-10-02T00:00:00Z,n1,0,{UUID},DCGM_FI_DEV_GPU_UTIL,40\n".encode()
        + f"2026-10-02T00:01:00Z,n\xe91,0,{UUID},DCGM_FI_DEV_GPU_UTIL,41\n".encode("latin-1")
    )
    res = read_dcgm(path, source="d", options={"format": "long_csv"})
    assert res.rows["x_line_number"].to_list() == [2]
    assert res.quarantine["x_line_number"].to_list() == [3]
    assert "\\xe9" in res.quarantine["reason"][0]


def test_prometheus_json_with_invalid_bytes_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "range.json"
    path.write_bytes(
        b'{"status":"success","data":{"resultType":"matrix","result":[\n'
        b'{"metric":{"__name__":"DCGM_FI_DEV_GPU_UTIL","Hostname":"n\xe91"},'
        b'"values":[[1790899200,"40"]]}]}}\n'
    )
    with pytest.raises(IngestError, match=r"range\.json, line 2: invalid UTF-8 bytes \\xe9"):
        read_dcgm(path, source="d", options={"format": "prometheus_range_json"})
