"""Format details of the file readers: Prometheus API JSON, long CSV/Parquet, nvidia-smi CSV."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from ingest.core.errors import IngestError
from ingest.telemetry.dcgm_formats import read_dcgm
from ingest.telemetry.dcgm_json import parse_prometheus_json
from ingest.telemetry.dcgm_nvsmi import host_from_path, parse_nvidia_smi

U0 = "GPU-00000000-0000-0000-0000-000000000000"
L0 = {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": U0, "Hostname": "n1"}
T5 = datetime(2026, 10, 2, 0, 0, 5, tzinfo=UTC)
T65 = datetime(2026, 10, 2, 0, 1, 5, tzinfo=UTC)
T185 = datetime(2026, 10, 2, 0, 3, 5, 250000, tzinfo=UTC)
TA = datetime(2026, 10, 2, 0, 0, 0, 123000, tzinfo=UTC)
TB = datetime(2026, 10, 2, 0, 1, tzinfo=UTC)


# --------------------------------------------------------------------------- Prometheus JSON


def _doc(result: list[dict], kind: str = "matrix") -> str:
    return json.dumps({"status": "success", "data": {"resultType": kind, "result": result}})


def test_json_matrix_vector_and_saved_files(tmp_path: Path) -> None:
    matrix = _doc([{"metric": L0, "values": [[1790899200, "5"], [1790899260.123, "6"]]}])
    vector = _doc([{"metric": {**L0, "gpu": "1"}, "value": [1790899320.5, "7"]}], "vector")
    # a file of several responses, one per line (a script saving one per query)
    f = tmp_path / "saved.json.gz"
    f.write_bytes(gzip.compress((matrix + "\n" + vector + "\n").encode()))
    r = read_dcgm(f, source="s", options={"format": "prometheus_range_json"})
    assert r.rows.select("time", "gpu", "value", "x_line_number").rows() == [
        (datetime(2026, 10, 2, 0, 0, tzinfo=UTC), 0, 5.0, 1),
        (datetime(2026, 10, 2, 0, 1, 0, 123000, tzinfo=UTC), 0, 6.0, 2),
        (datetime(2026, 10, 2, 0, 2, 0, 500000, tzinfo=UTC), 1, 7.0, 3),
    ]
    assert r.rows["x_source_file"][0] == str(f)
    # a pretty-printed single response reads the same
    pretty = json.dumps(json.loads(matrix), indent=2)
    r2 = parse_prometheus_json(pretty, source="s", file="p")
    assert r2.rows["value"].to_list() == [5.0, 6.0]


def test_json_rejects_and_errors() -> None:
    doc = _doc(
        [
            {"metric": L0, "values": [[1790899200, "NaN?"], [1790899260, "1"]]},
            {"metric": {"__name__": "DCGM_FI_DEV_FAN_SPEED"}, "values": [[1790899200, "0"]]},
        ]
    )
    r = parse_prometheus_json(doc, source="s", file="f")
    assert r.rows.select("value").to_series().to_list() == [1.0]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (1, 'sample is not [time, "value"] with numbers'),
        (3, "sample has no GPU labels (gpu, UUID)"),
    ]
    err = json.dumps({"status": "error", "errorType": "bad_data", "error": "parse error at char 3"})
    with pytest.raises(
        IngestError, match="f: Prometheus API response 1 is not a success: bad_data"
    ):
        parse_prometheus_json(err, source="s", file="f")
    with pytest.raises(IngestError, match="resultType 'scalar'"):
        parse_prometheus_json(
            json.dumps({"status": "success", "data": {"resultType": "scalar", "result": [1, "2"]}}),
            source="s",
            file="f",
        )
    with pytest.raises(IngestError, match="f: not a Prometheus API response"):
        parse_prometheus_json("<html>502 Bad Gateway</html>", source="s", file="f")
    assert parse_prometheus_json("  \n", source="s", file="f").rows.height == 0
    assert parse_prometheus_json(_doc([]), source="s", file="f").rows.height == 0


# --------------------------------------------------------------------------- long CSV / Parquet


def test_long_csv_times_aliases_and_quarantine(tmp_path: Path) -> None:
    f = tmp_path / "export.csv"
    f.write_text(
        "Timestamp,HOST,gpu_index,gpu_uuid,name,value,mig_instance,mig_profile,model_name,labels,"
        "x_source\n"
        f"2026-10-02T00:00:05Z,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,5,,,H100,,old\n"
        f"1790899265,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,6,3,1g.10gb,H100,"
        '"{""err_code"":""79""}",old\n'
        f"1790899325000,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,{9223372036854775794},,,H100,,old\n"
        f"2026-10-02 00:03:05.250,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,8,,,H100,,old\n"
        f"yesterday,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,9,,,H100,,old\n"
        f"2026-10-02T00:04:05Z,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,,,,H100,,old\n"
        "2026-10-02T00:04:05Z,n1,,,DCGM_FI_DEV_GPU_UTIL,1,,,H100,,old\n"
    )
    r = read_dcgm(f, source="s", options={"format": "long_csv"})
    assert r.sentinels_dropped == 1
    cols = ["time", "host", "gpu", "uuid", "mig_instance", "mig_profile", "value", "model_name"]
    assert r.rows.select(*cols, "labels", "x_source", "x_line_number").rows() == [
        (T5, "n1", 0, U0, None, None, 5.0, "H100", None, "s", 2),
        (T65, "n1", 0, U0, "3", "1g.10gb", 6.0, "H100", '{"err_code":"79"}', "s", 3),
        (T185, "n1", 0, U0, None, None, 8.0, "H100", None, "s", 5),
    ]
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (6, "unparseable time in column 'Timestamp'"),
        (7, "value is not a number (column 'value')"),
        (8, "sample has no GPU labels (gpu, UUID)"),
    ]
    assert r.quarantine["raw"][0] == f"yesterday,n1,0,{U0},DCGM_FI_DEV_GPU_UTIL,9,,,H100,,old"
    bad = tmp_path / "bad.csv"
    bad.write_text("when,host,metric,value\n1,n1,m,1\n")
    with pytest.raises(IngestError, match="bad.csv: long DCGM export has no time column"):
        read_dcgm(bad, source="s", options={"format": "long_csv"})


def test_long_parquet_timestamps_and_timezone(tmp_path: Path) -> None:
    f = tmp_path / "x.parquet"
    pl.DataFrame(
        {
            "time": [datetime(2026, 10, 2, 2, 0), datetime(2026, 10, 2, 2, 1)],
            "hostname": ["n1", "n1"],
            "gpu": [0, 1],
            "uuid": [U0, U0],
            "metric": ["DCGM_FI_DEV_POWER_USAGE"] * 2,
            "value": [412.5, 300.25],
            "node": ["k1", "k1"],
        }
    ).write_parquet(f)
    r = read_dcgm(f, source="s", options={"format": "long_parquet", "timezone": "Europe/Berlin"})
    assert r.rows.select("time", "gpu", "value", "labels", "x_line_number").rows() == [
        (datetime(2026, 10, 2, 0, 0, tzinfo=UTC), 0, 412.5, '{"node":"k1"}', 1),
        (datetime(2026, 10, 2, 0, 1, tzinfo=UTC), 1, 300.25, '{"node":"k1"}', 2),
    ]
    r = read_dcgm(f, source="s", options={"format": "long_parquet", "node_label": "node"})
    assert r.rows.select("host", "labels").rows() == [("k1", None), ("k1", None)]
    assert r.rows["time"][0] == datetime(2026, 10, 2, 2, 0, tzinfo=UTC)
    with pytest.raises(IngestError, match="dcgm format 'csv' is not supported"):
        read_dcgm(f, source="s", options={"format": "csv"})


# --------------------------------------------------------------------------- nvidia-smi


NVSMI = (
    "timestamp, name, pci.bus_id, index, uuid, utilization.gpu [%], memory.used [MiB], "
    "power.draw [W], clocks.sm [MHz], clocks_event_reasons.active, pstate, fan.speed [%]\n"
    f"2026/10/02 02:00:00.123, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, {U0}, 87 %, "
    "40000 MiB, 412.50 W, 1980 MHz, 0x0001, P0, [N/A]\n"
    "2026/10/02 02:00:00.123, NVIDIA H100 80GB HBM3, 00000000:28:00.0, 1, GPU-1, [GPU is lost], "
    "[GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost], [GPU is lost]\n"
    "2026/10/02 02:00:05.000, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, GPU-0, 5 %\n"
    # nvidia-smi restarted with `nounits` and another query, appending to the same log
    "timestamp, index, uuid, utilization.gpu [%], memory.used [MiB]\n"
    f"2026/10/02 02:01:00.000, 0, {U0}, 3, 41000\n"
    f"2026/10/02 02:01:00.000, 1, GPU-1, Enabled, 0\n"
)


def test_nvidia_smi_log(tmp_path: Path) -> None:
    f = tmp_path / "dgx-01.example.com.csv.gz"
    f.write_bytes(gzip.compress(NVSMI.encode()))
    r = read_dcgm(f, source="s", options={"format": "nvidia_smi_csv", "timezone": "Europe/Berlin"})
    assert set(r.rows["host"]) == {"dgx-01.example.com"}
    # blanks: [N/A] fan speed and the 7 fields of the lost GPU
    assert r.sentinels_dropped == 8
    assert r.rows.select("time", "gpu", "uuid", "metric", "value", "x_line_number").rows() == [
        (TA, 0, U0, "DCGM_FI_DEV_GPU_UTIL", 87.0, 2),
        (TA, 0, U0, "DCGM_FI_DEV_FB_USED", 40000.0, 2),
        (TA, 0, U0, "DCGM_FI_DEV_POWER_USAGE", 412.5, 2),
        (TA, 0, U0, "DCGM_FI_DEV_SM_CLOCK", 1980.0, 2),
        (TA, 0, U0, "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS", 1.0, 2),
        (TA, 0, U0, "nvidia_smi_pstate", 0.0, 2),
        (TA, 1, "GPU-1", "DCGM_FI_DEV_XID_ERRORS", 79.0, 3),  # [GPU is lost]
        (TB, 0, U0, "DCGM_FI_DEV_GPU_UTIL", 3.0, 6),
        (TB, 0, U0, "DCGM_FI_DEV_FB_USED", 41000.0, 6),
        (TB, 1, "GPU-1", "DCGM_FI_DEV_FB_USED", 0.0, 7),
    ]
    first = r.rows.row(0, named=True)
    assert (first["model_name"], first["labels"], first["hpc_job"]) == (
        "NVIDIA H100 80GB HBM3",
        '{"pci_bus_id":"00000000:18:00.0"}',
        None,
    )
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (4, "row does not have the header's number of fields"),
        (7, "field for DCGM_FI_DEV_GPU_UTIL is not a number: Enabled"),
    ]
    assert host_from_path(Path("/x/gke-ml-a3-pool-6917.log")) == "gke-ml-a3-pool-6917"


def test_nvidia_smi_errors() -> None:
    with pytest.raises(IngestError, match="x.csv, line 1: not an nvidia-smi --format=csv log"):
        parse_nvidia_smi(b"2026/10/02 02:00:00.000, 0, 87 %\n", source="s", file="x.csv", host="h")
    with pytest.raises(IngestError, match="x.csv: nvidia-smi header has no timestamp field"):
        parse_nvidia_smi(
            b"index, utilization.gpu [%]\n0, 5 %\n", source="s", file="x.csv", host="h"
        )
    r = parse_nvidia_smi(b"\n\n", source="s", file="x.csv", host="h")
    assert r.rows.height == 0


def test_long_export_label_columns_become_json_keys() -> None:
    from ingest.telemetry.dcgm_long import parse_long

    df = pl.DataFrame(
        {
            "timestamp": ["1790899200"],
            "hostname": ["n1"],
            "gpu": ["0"],
            "uuid": [U0],
            "metric": ["DCGM_FI_DEV_GPU_UTIL"],
            "value": ["1"],
            'odd "name"\\': ["line\nbreak"],
            "empty": [""],
        }
    )
    r = parse_long(df, source="s", file="f", first_line=2)
    assert r.rows["labels"].to_list() == ['{"odd \\"name\\"\\\\":"line\\nbreak"}']
    assert json.loads(r.rows["labels"][0]) == {'odd "name"\\': "line\nbreak"}
