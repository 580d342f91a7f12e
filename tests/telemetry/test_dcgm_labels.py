"""Label variants, blank sentinels, MIG, hpc_job duplicates, counters and XIDs: the same samples
written as dcgm-exporter text, a Prometheus API response, a long CSV and a long Parquet file land
the same rows, with these exact values."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from dcgm_fleet import sorted_rows

from ingest.core.common import ReadResult
from ingest.telemetry.dcgm import parse_text
from ingest.telemetry.dcgm_formats import read_dcgm
from ingest.telemetry.dcgm_json import parse_prometheus_json

T0 = 1790899200000  # 2026-10-02 00:00:00 UTC, ms
U0 = "GPU-00000000-0000-0000-0000-000000000000"
U1 = "GPU-11111111-1111-1111-1111-111111111111"
BLANK = "9223372036854775794"

# (metric, labels, value, time in ms)
SAMPLES: list[tuple[str, dict[str, str], str, int]] = [
    # Hostname (older exporters) and hostname (newer)
    ("DCGM_FI_DEV_GPU_UTIL", {"gpu": "0", "UUID": U0, "Hostname": "n1"}, "25", T0),
    ("DCGM_FI_DEV_GPU_UTIL", {"gpu": "1", "UUID": U1, "hostname": "n2"}, "40", T0),
    # a PROF ratio next to the GPU_UTIL percent: both land as exported
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", {"gpu": "0", "UUID": U0, "Hostname": "n1"}, "0.25", T0),
    # the energy counter (mJ since boot) lands as the counter value
    (
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        {"gpu": "0", "UUID": U0, "Hostname": "n1"},
        "128996013",
        T0,
    ),
    # blank sentinels: dropped and counted
    ("DCGM_FI_DEV_FB_USED", {"gpu": "0", "UUID": U0, "Hostname": "n1"}, BLANK, T0),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        {"gpu": "0", "UUID": U0, "Hostname": "n1"},
        "9223372036854775807",
        T0,
    ),
    ("DCGM_FI_DEV_FB_USED", {"gpu": "1", "UUID": U1, "hostname": "n2"}, "1000000000000000000", T0),
    # hpc_job: one sample repeated per job sharing the GPU, each its own row
    (
        "DCGM_FI_DEV_POWER_USAGE",
        {"gpu": "0", "UUID": U0, "Hostname": "n1", "hpc_job": "101"},
        "412.5",
        T0 + 60000,
    ),
    (
        "DCGM_FI_DEV_POWER_USAGE",
        {"gpu": "0", "UUID": U0, "Hostname": "n1", "hpc_job": "102"},
        "412.5",
        T0 + 60000,
    ),
    # MIG instance
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        {"gpu": "1", "UUID": U1, "GPU_I_ID": "3", "GPU_I_PROFILE": "1g.10gb", "Hostname": "n2"},
        "0.5",
        T0 + 60000,
    ),
    # Kubernetes after ServiceMonitor relabelling: the workload is in exported_*, the node in
    # `node`; `Hostname`, `pod`, `namespace` are the exporter's own
    (
        "DCGM_FI_DEV_GPU_UTIL",
        {
            "gpu": "2",
            "UUID": U0,
            "Hostname": "dcgm-exporter-x7",
            "node": "gke-n7",
            "pod": "dcgm-exporter-x7",
            "namespace": "gpu-operator",
            "exported_pod": "train-0",
            "exported_namespace": "research",
            "exported_container": "main",
        },
        "93",
        T0 + 120000,
    ),
    # XIDs: the gauge (last XID) and the counter by code (code kept in `labels`)
    ("DCGM_FI_DEV_XID_ERRORS", {"gpu": "0", "UUID": U0, "Hostname": "n1"}, "79", T0 + 120000),
    (
        "DCGM_EXP_XID_ERRORS_COUNT",
        {"gpu": "0", "UUID": U0, "Hostname": "n1", "err_code": "79", "window_size_in_ms": "300000"},
        "2",
        T0 + 120000,
    ),
    # an escaped label value, and an empty one (= absent)
    (
        "DCGM_FI_DEV_SM_CLOCK",
        {"gpu": "1", "UUID": U1, "hostname": "n2", "job": 'say "hi" \\ bye', "container": ""},
        "1980",
        T0 + 120000,
    ),
]


def _esc(v: str) -> str:
    return v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


def as_text() -> bytes:
    lines = [
        "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).",
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge",
    ]
    for name, labels, value, ms in SAMPLES:
        inner = ",".join(f'{k}="{_esc(v)}"' for k, v in labels.items())
        lines.append(f"{name}{{{inner}}} {value} {ms}")
    return ("\n".join(lines) + "\n").encode()


def as_json() -> bytes:
    result = [
        # Prometheus drops empty-valued labels
        {
            "metric": {"__name__": n, **{k: v for k, v in lab.items() if v}},
            "values": [[ms / 1000, v]],
        }
        for n, lab, v, ms in SAMPLES
    ]
    return json.dumps(
        {"status": "success", "data": {"resultType": "matrix", "result": result}}
    ).encode()


def as_long() -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for name, labels, value, ms in SAMPLES:
        row: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "metric": name,
            "value": value,
        }
        row.update({("uuid" if k == "UUID" else k): v for k, v in labels.items()})
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def read_as(fmt: str, tmp_path: Path, node_label: str | None = None) -> ReadResult:
    opts = {"format": fmt, **({"node_label": node_label} if node_label else {})}
    if fmt == "prometheus_text":
        return parse_text(
            as_text(), source="s", file="f", default_time=datetime.now(UTC), node_label=node_label
        )
    if fmt == "prometheus_range_json":
        return parse_prometheus_json(as_json(), source="s", file="f", node_label=node_label)
    path = tmp_path / ("f.parquet" if fmt == "long_parquet" else "f.csv")
    if fmt == "long_parquet":
        as_long().write_parquet(path)
    else:
        buf = io.BytesIO()
        as_long().write_csv(buf)
        path.write_bytes(buf.getvalue())
    return read_dcgm(path, source="s", options=opts)


UTC0 = datetime(2026, 10, 2, tzinfo=UTC)
UTC1 = datetime(2026, 10, 2, 0, 1, tzinfo=UTC)
UTC2 = datetime(2026, 10, 2, 0, 2, tzinfo=UTC)
COLS = [
    "time",
    "host",
    "gpu",
    "uuid",
    "mig_instance",
    "mig_profile",
    "metric",
    "value",
    "hpc_job",
    "namespace",
    "pod",
    "container",
    "labels",
]
EXPECTED = [
    (UTC0, "n1", 0, U0, None, None, "DCGM_FI_DEV_GPU_UTIL", 25.0, None, None, None, None, None),
    (UTC0, "n2", 1, U1, None, None, "DCGM_FI_DEV_GPU_UTIL", 40.0, None, None, None, None, None),
    (
        UTC0,
        "n1",
        0,
        U0,
        None,
        None,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        0.25,
        None,
        None,
        None,
        None,
        None,
    ),
    (
        UTC0,
        "n1",
        0,
        U0,
        None,
        None,
        "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION",
        128996013.0,
        None,
        None,
        None,
        None,
        None,
    ),
    (UTC0, "n2", 1, U1, None, None, "DCGM_FI_DEV_FB_USED", 1e18, None, None, None, None, None),
    (
        UTC1,
        "n1",
        0,
        U0,
        None,
        None,
        "DCGM_FI_DEV_POWER_USAGE",
        412.5,
        "101",
        None,
        None,
        None,
        None,
    ),
    (
        UTC1,
        "n1",
        0,
        U0,
        None,
        None,
        "DCGM_FI_DEV_POWER_USAGE",
        412.5,
        "102",
        None,
        None,
        None,
        None,
    ),
    (
        UTC1,
        "n2",
        1,
        U1,
        "3",
        "1g.10gb",
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        0.5,
        None,
        None,
        None,
        None,
        None,
    ),
    (
        UTC2,
        "dcgm-exporter-x7",
        2,
        U0,
        None,
        None,
        "DCGM_FI_DEV_GPU_UTIL",
        93.0,
        None,
        "research",
        "train-0",
        "main",
        '{"node":"gke-n7"}',
    ),
    (UTC2, "n1", 0, U0, None, None, "DCGM_FI_DEV_XID_ERRORS", 79.0, None, None, None, None, None),
    (
        UTC2,
        "n1",
        0,
        U0,
        None,
        None,
        "DCGM_EXP_XID_ERRORS_COUNT",
        2.0,
        None,
        None,
        None,
        None,
        '{"err_code":"79","window_size_in_ms":"300000"}',
    ),
    (
        UTC2,
        "n2",
        1,
        U1,
        None,
        None,
        "DCGM_FI_DEV_SM_CLOCK",
        1980.0,
        None,
        None,
        None,
        None,
        '{"job":"say \\"hi\\" \\\\ bye"}',
    ),
]

FORMATS = ["prometheus_text", "prometheus_range_json", "long_csv", "long_parquet"]


@pytest.mark.parametrize("fmt", FORMATS)
def test_label_variants_land_exact_rows(fmt: str, tmp_path: Path) -> None:
    r = read_as(fmt, tmp_path)
    assert r.quarantine.height == 0
    assert r.sentinels_dropped == 2
    assert r.rows.select(COLS).rows() == EXPECTED
    assert json.loads(r.rows["labels"][-1]) == {"job": 'say "hi" \\ bye'}
    assert r.rows["model_name"].null_count() == r.rows.height


@pytest.mark.parametrize("fmt", FORMATS)
def test_node_label_option(fmt: str, tmp_path: Path) -> None:
    """With `node_label: node` the GKE sample's host is its node; samples without that label
    (every other one here) are quarantined with the reason."""
    r = read_as(fmt, tmp_path, node_label="node")
    assert r.rows.select("host", "pod", "labels").rows() == [("gke-n7", "train-0", None)]
    assert r.quarantine.height == 11
    assert set(r.quarantine["reason"]) == {"no node label 'node' (option node_label)"}


def test_every_format_lands_the_same_rows(tmp_path: Path) -> None:
    base = sorted_rows(read_as("prometheus_text", tmp_path).rows.drop("x_source"))
    for fmt in FORMATS[1:]:
        assert sorted_rows(read_as(fmt, tmp_path).rows.drop("x_source")).equals(base), fmt


def test_default_dcgm_exporter_fields_all_land(samples: Path) -> None:
    """One scrape holding every field of dcgm-exporter's default-counters.csv (the real list,
    gauges and counters) lands every field under its name, with its value."""
    fields = []
    for line in (
        (samples / "dcgm" / "nvidia-dcgm-exporter-default-counters.csv").read_text().splitlines()
    ):
        if line.strip() and not line.startswith("#"):
            name, kind, _ = (p.strip() for p in line.split(",", 2))
            if kind in ("gauge", "counter"):
                fields.append((name, kind))
    assert len(fields) == 25
    text = []
    for i, (name, kind) in enumerate(fields):
        text.append(f"# TYPE {name} {kind}")
        text.append(f'{name}{{gpu="0",UUID="{U0}",Hostname="n1",modelName="NVIDIA H100"}} {i}.5')
    r = parse_text("\n".join(text).encode(), source="s", file="f", default_time=UTC0)
    assert r.rows.select("metric", "value").rows() == [
        (n, i + 0.5) for i, (n, _) in enumerate(fields)
    ]
    assert set(r.rows["model_name"]) == {"NVIDIA H100"}
    assert ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter") in fields


def test_long_labels_are_cleaned_per_label_set_and_kept_per_row() -> None:
    """A long export's labels are trimmed and merged once per distinct label set: rows whose
    raw labels differ only by spaces or by which alias column holds the host land with the
    same labels, each row keeping its own time, value and line; a set with no host is
    quarantined on every one of its rows, and the rows after it keep their own sets' labels."""
    from ingest.telemetry.dcgm_long import parse_long

    df = pl.DataFrame(
        {
            "timestamp": ["2026-10-02T00:00:00Z"] * 3
            + ["2026-10-02T00:01:00Z"] * 2
            + ["2026-10-02T00:02:00Z"],
            "Hostname": ["n1", " n1 ", "", "n1", "", "n2"],
            "hostname": [None, None, "n1", None, "", None],
            "gpu": [" 0", "0", "0", "0", "1", "3"],
            "uuid": ["GPU-a", "GPU-a", "GPU-a ", "GPU-a", "GPU-b", "GPU-c"],
            "metric": ["DCGM_FI_DEV_GPU_UTIL", " DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_POWER_USAGE"]
            + ["DCGM_FI_DEV_GPU_UTIL"] * 3,
            "value": ["10", "20", "300", "40", "50", "60"],
        }
    )
    res = parse_long(df, source="s", file="f.csv", first_line=2)
    assert res.rows.select("x_line_number", "host", "gpu", "uuid", "metric", "value").rows() == [
        (2, "n1", 0, "GPU-a", "DCGM_FI_DEV_GPU_UTIL", 10.0),
        (3, "n1", 0, "GPU-a", "DCGM_FI_DEV_GPU_UTIL", 20.0),
        (4, "n1", 0, "GPU-a", "DCGM_FI_DEV_POWER_USAGE", 300.0),
        (5, "n1", 0, "GPU-a", "DCGM_FI_DEV_GPU_UTIL", 40.0),
        # after the rejected row, a set of its own keeps its labels
        (7, "n2", 3, "GPU-c", "DCGM_FI_DEV_GPU_UTIL", 60.0),
    ]
    assert res.quarantine.select("x_line_number", "reason").rows() == [
        (6, "no host label (Hostname/hostname)")
    ]
