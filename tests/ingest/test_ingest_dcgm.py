from __future__ import annotations

import gzip
import os
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.telemetry.dcgm import parse_text, read_dcgm_text

SCRAPE = datetime(2024, 1, 1, tzinfo=UTC)
U0 = "GPU-00000000-0000-0000-0000-000000000000"
U1 = "GPU-11111111-1111-1111-1111-111111111111"


def parse(text: str, **kw: object):
    return parse_text(
        text.encode(),
        source="src",
        file="f.prom",
        default_time=SCRAPE,
        **kw,  # type: ignore[arg-type]
    )


# --------------------------------------------------------------------------- real samples


def test_datadog_fixture_metrics(samples: Path) -> None:
    path = samples / "dcgm" / "datadog-dcgm-fixture-metrics.txt"
    r = read_dcgm_text(path, source="dd", options={"scrape_time": "2024-01-01T00:00:00Z"})
    assert r.rows.schema == polars_schema("dcgm_samples")
    # 38 sample lines: 24 with GPU labels, 14 dummy series with no labels at all
    assert r.rows.height == 24
    assert r.quarantine.height == 14
    assert set(r.quarantine["reason"]) == {"sample has no GPU labels (gpu, UUID)"}
    assert r.quarantine["x_line_number"].to_list() == list(range(74, 114, 3))
    assert r.quarantine["raw"][1] == "DCGM_FI_DEV_FAN_SPEED 0"
    assert r.sentinels_dropped == 0
    assert dict(r.rows.group_by("host").len().iter_rows()) == {
        "424773df46e0": 16,
        "551bdf382151": 7,
        "ip-11111": 1,
    }
    assert set(r.rows["time"]) == {SCRAPE}
    assert set(r.rows["gpu"]) == {0}
    assert r.rows["hpc_job"].null_count() == 24
    assert r.rows["mig_instance"].null_count() == 24

    def at(line: int) -> dict:
        return r.rows.filter(pl.col("x_line_number") == line).row(0, named=True)

    power = at(12)
    assert power["metric"] == "DCGM_FI_DEV_POWER_USAGE"
    assert power["value"] == 8.969
    assert power["uuid"] == "GPU-20c56d28-0da5-6d26-a36a-e7af1ce2586e"
    assert power["model_name"] == "Tesla T4"
    assert power["labels"] == (
        '{"DCGM_FI_DRIVER_VERSION":"460.106.00",'
        '"DCGM_FI_PROCESS_NAME":"/usr/bin/dcgm-exporter","device":"nvidia0"}'
    )
    assert at(15)["value"] == 128996013.0
    assert at(67)["metric"] == "DCGM_FI_DEV_FB_USED_PERCENT"
    assert at(67)["value"] == 0.000008
    # the last line has no trailing newline
    last = at(116)
    assert last == {
        "time": SCRAPE,
        "host": "ip-11111",
        "gpu": 0,
        "uuid": "GPU-abc",
        "mig_instance": None,
        "mig_profile": None,
        "metric": "DCGM_FI_PROF_DRAM_ACTIVE",
        "value": 0.000003,
        "model_name": "NVIDIA A10G",
        "hpc_job": None,
        "namespace": "ray-llm",
        "pod": "ray-1111111",
        "container": "ray-worker",
        "labels": (
            '{"DCGM_FI_CUDA_DRIVER_VERSION":"12040","DCGM_FI_DEV_BRAND":"NVIDIA",'
            '"DCGM_FI_DEV_MINOR_NUMBER":"0","DCGM_FI_DEV_NAME":"NVIDIA A10G",'
            '"DCGM_FI_DEV_SERIAL":"1111111","DCGM_FI_DRIVER_VERSION":"550.144.03",'
            '"DCGM_FI_PROCESS_NAME":"/usr/bin/dcgm-exporter","device":"nvidia0"}'
        ),
        "x_source": "dd",
        "x_source_file": str(path),
        "x_line_number": 116,
    }


def test_datadog_label_remap(samples: Path) -> None:
    path = samples / "dcgm" / "datadog-dcgm-fixture-label_remap.txt"
    r = read_dcgm_text(path, source="dd", options={"scrape_time": "2024-01-01T00:00:00Z"})
    assert r.quarantine.height == 0
    assert r.rows.select(
        "host", "gpu", "metric", "value", "namespace", "pod", "container", "x_line_number"
    ).row(0) == ("424773df46e0", 0, "DCGM_FI_DEV_GPU_UTIL", 0.0, "foo", "bar", "baz", 3)


# --------------------------------------------------------------------------- small inputs


def test_timestamps_present_and_absent(tmp_path: Path) -> None:
    text = (
        "# HELP DCGM_FI_DEV_GPU_UTIL util\n"
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{U0}",Hostname="n1"}} 42 1730000000123\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="{U1}",Hostname="n1"}} 7\n'
    )
    r = parse(text)
    assert r.rows["time"].to_list() == [
        datetime(2024, 10, 27, 3, 33, 20, 123000, tzinfo=UTC),
        SCRAPE,
    ]
    assert r.rows["value"].to_list() == [42.0, 7.0]
    assert r.rows["x_line_number"].to_list() == [3, 4]
    # no scrape_time option: the file's mtime
    f = tmp_path / "n1.prom"
    f.write_text(text)
    mtime = datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC).timestamp()
    os.utime(f, (mtime, mtime))
    r = read_dcgm_text(f, source="src")
    assert r.rows["time"][1] == datetime(2025, 3, 4, 5, 6, 7, tzinfo=UTC)
    r = read_dcgm_text(f, source="src", options={"scrape_time": "2025-01-01T10:00:00+02:00"})
    assert r.rows["time"][1] == datetime(2025, 1, 1, 8, tzinfo=UTC)


def test_hostname_label_variants_and_node_label() -> None:
    text = (
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{U0}",Hostname="exporter-abc",node="gke-n1"}} 1\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="{U1}",hostname="n2"}} 2\n'
    )
    r = parse(text)
    assert r.rows["host"].to_list() == ["exporter-abc", "n2"]
    r = parse(text, node_label="node")
    assert r.rows["host"].to_list() == ["gke-n1"]
    assert r.quarantine.select("x_line_number", "reason").row(0) == (
        2,
        "no node label 'node' (option node_label)",
    )


def test_hpc_job_duplicates_are_separate_rows() -> None:
    labels = f'gpu="0",UUID="{U0}",Hostname="n1"'
    text = (
        f'DCGM_FI_DEV_GPU_UTIL{{{labels},hpc_job="101"}} 55 1730000000000\n'
        f'DCGM_FI_DEV_GPU_UTIL{{{labels},hpc_job="102"}} 55 1730000000000\n'
    )
    r = parse(text)
    assert r.rows.select("hpc_job", "value", "gpu").rows() == [("101", 55.0, 0), ("102", 55.0, 0)]


def test_blank_sentinels_dropped_and_counted() -> None:
    text = (
        f'DCGM_FI_DEV_FB_USED{{gpu="0",UUID="{U0}",Hostname="n1"}} 9223372036854775794\n'
        f'DCGM_FI_DEV_FB_USED{{gpu="1",UUID="{U1}",Hostname="n1"}} 1024\n'
        f'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{gpu="0",UUID="{U0}",Hostname="n1"}} 9223372036854775807\n'
        f'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{{gpu="1",UUID="{U1}",Hostname="n1"}} 9223372036854775792\n'
    )
    r = parse(text)
    assert r.sentinels_dropped == 3
    assert r.rows.select("gpu", "value").rows() == [(1, 1024.0)]
    assert r.quarantine.height == 0


def test_mig_and_kubernetes_labels() -> None:
    text = (
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="' + U0 + '",GPU_I_ID="3",'
        'GPU_I_PROFILE="1g.10gb",modelName="NVIDIA A100-SXM4-80GB",Hostname="dcgm-exporter-x",'
        'node="n7",pod="dcgm-exporter-x",namespace="gpu-operator",'
        'exported_pod="train-0",exported_namespace="research",exported_container="main"} 0.25\n'
        'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="' + U1 + '",Hostname="n7",'
        'pod_name="old-pod",pod_namespace="old-ns",container=""} 10\n'
    )
    r = parse(text)
    rows = r.rows.select(
        "mig_instance", "mig_profile", "model_name", "namespace", "pod", "container"
    ).rows()
    assert rows == [
        ("3", "1g.10gb", "NVIDIA A100-SXM4-80GB", "research", "train-0", "main"),
        (None, None, None, "old-ns", "old-pod", None),
    ]


def test_slow_path_lines_and_quarantine() -> None:
    text = (
        "\n"
        "  # an indented comment\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{U0}",Hostname="n1",job="a}}b \\"q\\""}} 5\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="{U1}",Hostname="n1"}}   6   1730000000000\r\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="{U1}",Hostname="n1"}} not-a-number\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="x",UUID="{U1}",Hostname="n1"}} 1\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="{U1}",Hostname="n1"}} 1 2 3\n'
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="1",UUID="{U1}" Hostname="n1"}} 1\n'
    )
    r = parse(text)
    assert r.rows.select("x_line_number", "gpu", "value").rows() == [(3, 0, 5.0), (4, 1, 6.0)]
    assert r.rows["time"][1] == datetime(2024, 10, 27, 3, 33, 20, tzinfo=UTC)
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (5, "unparseable sample line"),
        (6, "gpu label is not an integer"),
        (7, "unparseable sample line"),
        (8, "malformed metric name or label set"),
    ]
    assert r.quarantine["raw"][0].endswith("not-a-number")


def test_gzip_openmetrics_and_errors(tmp_path: Path) -> None:
    text = (
        "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",UUID="{U0}",Hostname="n1"}} 3 1730000000.5\n'
        "# EOF\n"
    )
    f = tmp_path / "n1.prom.gz"
    f.write_bytes(gzip.compress(text.encode()))
    r = read_dcgm_text(f, source="src", options={"format": "openmetrics"})
    assert r.rows["time"].to_list() == [datetime(2024, 10, 27, 3, 33, 20, 500000, tzinfo=UTC)]

    bad = tmp_path / "bad.prom"
    bad.write_text('# comment\n{"not": "prometheus"}\n')
    with pytest.raises(IngestError, match=r"bad\.prom, line 2: not Prometheus text"):
        read_dcgm_text(bad, source="src")
    trunc = tmp_path / "trunc.prom.gz"
    trunc.write_bytes(gzip.compress(text.encode())[:20])
    with pytest.raises(IngestError, match=r"trunc\.prom\.gz: corrupt or truncated gzip"):
        read_dcgm_text(trunc, source="src")
    with pytest.raises(IngestError, match="'long_csv' is not a text exposition format"):
        read_dcgm_text(f, source="src", options={"format": "long_csv"})
    empty = tmp_path / "empty.prom"
    empty.write_text("")
    assert read_dcgm_text(empty, source="src").rows.height == 0


def test_gzip_members_match_plain_parse(tmp_path: Path) -> None:
    lines = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    for i in range(40):
        lines.append(f'DCGM_FI_DEV_GPU_UTIL{{gpu="{i % 4}",UUID="{U0}",Hostname="n{i}"}} {i} {i}')
        if i == 25:
            lines.append("DCGM_FI_DEV_FAN_SPEED 0")
            lines.append("garbage here")
    text = "\n".join(lines) + "\n"
    plain = tmp_path / "a.prom"
    plain.write_text(text)
    gz = tmp_path / "a.prom.gz"
    half = len(text) // 2
    cut = text.index("\n", half) + 1
    # two gzip members (as `cat a.gz b.gz` leaves them)
    gz.write_bytes(gzip.compress(text[:cut].encode()) + gzip.compress(text[cut:].encode()))
    a = read_dcgm_text(plain, source="s", options={"scrape_time": SCRAPE})
    b = read_dcgm_text(gz, source="s", options={"scrape_time": SCRAPE})
    assert a.rows.height == 40
    assert a.rows.drop("x_source_file").equals(b.rows.drop("x_source_file"))
    assert b.quarantine.select("x_line_number", "reason").rows() == [
        (28, "sample has no GPU labels (gpu, UUID)"),
        (29, "unparseable sample line"),
    ]
    assert b.quarantine["raw"].to_list() == ["DCGM_FI_DEV_FAN_SPEED 0", "garbage here"]
    trunc = tmp_path / "t.prom.gz"
    trunc.write_bytes(gzip.compress(text.encode())[:-10])
    with pytest.raises(IngestError, match="truncated gzip"):
        read_dcgm_text(trunc, source="s")
    junk = tmp_path / "j.prom.gz"
    junk.write_bytes(gzip.compress(b"junk line one\njunk line two\n" * 50))
    with pytest.raises(IngestError, match=r"j\.prom\.gz, line 1: not Prometheus text"):
        read_dcgm_text(junk, source="s")
