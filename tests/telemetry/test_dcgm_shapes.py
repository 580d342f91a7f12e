"""The long sample table is the same whichever shape the generator's DCGM samples arrive in.

One fleet (tests/telemetry/conftest.py) written as dcgm-exporter text, OpenMetrics, a Prometheus
API response, long CSV, long Parquet and nvidia-smi CSV logs; each is read by its reader.
"""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime

import polars as pl
import pytest
from dcgm_fleet import ShapeFleet, sorted_rows

from fleetledger.generator.dcgm_shapes import EXTENSIONS, SHAPES, configure

LABELLED = [s for s in SHAPES if s != "nvidia_smi_csv"]
NVSMI_METRICS = [
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_SM_CLOCK",
]


@pytest.fixture(scope="module")
def text_rows(shape_fleet: ShapeFleet) -> pl.DataFrame:
    return shape_fleet.read("prometheus_text").rows


def test_prometheus_text_of_the_fleet(shape_fleet: ShapeFleet, text_rows: pl.DataFrame) -> None:
    """What the other shapes are compared with: every label variant of the fleet is in it."""
    r = shape_fleet.read("prometheus_text")
    assert (r.rows.height, r.quarantine.height, r.sentinels_dropped) == (505148, 0, 5760)
    # health fields: AWS exports the throttle reasons (2 nodes x 8 GPUs: 1440 scrapes, 1428 on
    # the node with the 23 min gap), on-prem the SBE and DBE counters and the 3 row-remap
    # fields (8 GPUs x (1440 + 1281 scrapes: the XID 79 node misses 159 during its outage))
    aws, onprem = 8 * (1440 + 1428), 8 * (1440 + 1281)
    assert dict(r.rows.group_by("metric").len().iter_rows()) == {
        "DCGM_FI_DEV_FB_USED": 68068,
        "DCGM_FI_DEV_GPU_UTIL": 62308,  # a MIG GPU's GPU_UTIL is a blank sentinel (5760)
        "DCGM_FI_DEV_POWER_USAGE": 68068,
        "DCGM_FI_DEV_SM_CLOCK": 68068,
        "DCGM_FI_DEV_XID_ERRORS": 68068,
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE": 38784,
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS": aws,
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL": onprem,
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": onprem,
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS": onprem,
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS": onprem,
        "DCGM_FI_DEV_ROW_REMAP_FAILURE": onprem,
    }
    assert 373364 + aws + 5 * onprem == 505148
    # GKE: the node from label `node`, not the exporter pod in `Hostname`
    assert sorted(text_rows["host"].unique()) == [
        "aws-p5-01",
        "aws-p5-02",
        "dgx-01",
        "dgx-02",
        "gke-ml-a3-pool-6917",
        "gke-ml-mig-pool-5d21",
    ]
    mig = text_rows.filter(pl.col("mig_instance").is_not_null())
    assert mig.height == 15840
    assert sorted(mig.select("mig_instance", "mig_profile").unique().rows()) == [
        ("1", "3g.40gb"),
        ("2", "2g.20gb"),
        ("3", "2g.20gb"),
    ]
    # 20825 AWS GPU samples held by a job, each with 7 metrics (6 + the throttle reasons)
    assert text_rows.filter(pl.col("hpc_job").is_not_null()).height == 20825 * 7
    # pod-labelled rows: 62921 before issue 12's planted cases, less the evicted pod's lost half:
    # embed-batch-004 (2 GPUs, 5 metrics) ran 6887 s (58 scrapes of 120 s) and is evicted at
    # 6887 // 2 = 3443 s (29 scrapes): 2 x 5 x (58 - 29) = 290 rows fewer. The rolling update
    # moves rows between pods, not their number: the old vLLM pod's 15420 and the new one's
    # 13200 are the 28620 the one server had
    pods = text_rows.filter(pl.col("pod").is_not_null())
    assert pods.height == 62921 - 2 * 5 * (58 - 29) == 62631
    assert pods.filter(pl.col("pod") == "embed-batch-004").height == 2 * 5 * 29
    vllm = pods.filter(pl.col("pod").str.starts_with("vllm-llama-70b-"))
    assert sorted(vllm.group_by("pod").len()["len"].to_list()) == [13200, 15420]
    xid = text_rows.filter((pl.col("metric") == "DCGM_FI_DEV_XID_ERRORS") & (pl.col("value") > 0))
    assert xid.filter(pl.col("value") == 79).select("time", "host", "gpu", "value").rows() == [
        (datetime(2026, 10, 3, 10, 16, 5, tzinfo=UTC), "dgx-01", 3, 79.0)
    ]
    # the row remap's XID 63 stays in the gauge (the last XID) from its sample to the end:
    # 19:42:18 is dgx-02's first scrape after 19:42 (every 120 s from 00:00:18); 129 to midnight
    remap = xid.filter(pl.col("value") == 63)
    assert remap.select("host", "gpu").unique().rows() == [("dgx-02", 2)]
    assert remap["time"].min() == datetime(2026, 10, 3, 19, 42, 18, tzinfo=UTC)
    # the double-bit ECC error's XID 48 on GPU 1 of dgx-01 (dgx-02 has no free 57 min on day 2;
    # no run holds dgx-01 before 01:44), from its scrape at 00:10:05 on day 2 until the GPU's
    # reset at 00:46:42: 19 samples, 00:10:05 to 00:46:05 every 120 s
    dbe = xid.filter(pl.col("value") == 48)
    assert dbe.select("host", "gpu").unique().rows() == [("dgx-01", 1)]
    assert (dbe["time"].min(), dbe["time"].max()) == (
        datetime(2026, 10, 3, 0, 10, 5, tzinfo=UTC),
        datetime(2026, 10, 3, 0, 46, 5, tzinfo=UTC),
    )
    assert remap.height == 129 and dbe.height == 19 and xid.height == 1 + 129 + 19
    first = text_rows.filter(pl.col("host") == "gke-ml-a3-pool-6917").row(0, named=True)
    # the labels that fill no column (Hostname, the exporter pod, is a host label: not here)
    assert first["labels"] == (
        '{"DCGM_FI_DRIVER_VERSION":"550.90.07","device":"nvidia0","pci_bus_id":"00000000:18:00.0"}'
    )


@pytest.mark.parametrize("shape", LABELLED[1:])
def test_every_labelled_shape_lands_the_same_rows(
    shape: str, shape_fleet: ShapeFleet, text_rows: pl.DataFrame
) -> None:
    r = shape_fleet.read(shape)
    assert (r.quarantine.height, r.sentinels_dropped) == (0, 5760)
    got = sorted_rows(r.rows)
    want = sorted_rows(text_rows)
    assert got.height == want.height == 505148
    assert got.equals(want)


def test_nvidia_smi_logs_land_the_physical_gpu_samples(
    shape_fleet: ShapeFleet, text_rows: pl.DataFrame
) -> None:
    """nvidia-smi has no job, pod or MIG instance rows and no profiling metric; what it has
    equals the exporter's samples of the same GPU and time. The GPU that fell off the bus shows
    `[GPU is lost]`, read back as XID 79; other XID gauge values are not in the log."""
    r = shape_fleet.read("nvidia_smi_csv")
    # 5760 `[N/A]` utilisations of MIG-mode GPUs and the lost GPU's 4 fields
    assert (r.rows.height, r.quarantine.height, r.sentinels_dropped) == (265245, 0, 5764)
    cols = ["time", "host", "gpu", "uuid", "metric", "value", "model_name"]
    want = (
        text_rows.filter(pl.col("mig_instance").is_null() & pl.col("metric").is_in(NVSMI_METRICS))
        .unique(["time", "host", "gpu", "metric"])
        .filter(
            ~(  # the lost GPU's own row shows no values
                (pl.col("host") == "dgx-01")
                & (pl.col("gpu") == 3)
                & (pl.col("time") == datetime(2026, 10, 3, 10, 16, 5, tzinfo=UTC))
            )
        )
        .select(cols)
    )
    got = r.rows.filter(pl.col("metric") != "DCGM_FI_DEV_XID_ERRORS")
    assert got.height == want.height == 265244
    assert got.select(cols).sort(cols).equals(want.sort(cols))
    xid = r.rows.filter(pl.col("metric") == "DCGM_FI_DEV_XID_ERRORS")
    assert xid.select("time", "host", "gpu", "value").rows() == [
        (datetime(2026, 10, 3, 10, 16, 5, tzinfo=UTC), "dgx-01", 3, 79.0)
    ]
    assert (
        r.rows.select(
            pl.col("hpc_job", "pod", "namespace", "container", "mig_instance").null_count()
        ).row(0)
        == (265245,) * 5
    )
    assert r.rows.filter(pl.col("host") == "dgx-02").row(0, named=True)["labels"] == (
        '{"pci_bus_id":"00000000:18:00.0"}'
    )


def test_shape_files_are_what_their_tools_write(shape_fleet: ShapeFleet) -> None:
    day = shape_fleet.days[0]
    om = gzip.decompress(shape_fleet.files("openmetrics", "aws", day)[0].read_bytes()).decode()
    lines = om.splitlines()
    assert lines[-1] == "# EOF"
    assert lines[:2] == [
        "# HELP DCGM_FI_DEV_SM_CLOCK SM clock frequency (in MHz).",
        "# TYPE DCGM_FI_DEV_SM_CLOCK gauge",
    ]
    # families are contiguous (one TYPE line each) and timestamps are seconds
    # (AWS: the 6 of every node + the throttle reasons of its counters file)
    assert sum(line.startswith("# TYPE") for line in lines) == 7
    assert "# TYPE DCGM_FI_DEV_CLOCK_THROTTLE_REASONS gauge" in lines
    assert lines[2].endswith(" 345 1790899200")
    onprem = gzip.decompress(
        shape_fleet.files("openmetrics", "onprem", day)[0].read_bytes()
    ).decode()
    types = [line for line in onprem.splitlines() if line.startswith("# TYPE")]
    assert types[5:] == [  # after the 5 of a node without the profiling metric
        "# TYPE DCGM_FI_DEV_ECC_SBE_VOL_TOTAL counter",
        "# TYPE DCGM_FI_DEV_ECC_DBE_VOL_TOTAL counter",
        "# TYPE DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS counter",
        "# TYPE DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS counter",
        "# TYPE DCGM_FI_DEV_ROW_REMAP_FAILURE gauge",
    ]
    js = json.loads(
        gzip.decompress(shape_fleet.files("prometheus_range_json", "gcp", day)[0].read_bytes())
    )
    assert js["status"] == "success" and js["data"]["resultType"] == "matrix"
    first = js["data"]["result"][0]
    assert first["metric"]["__name__"] == "DCGM_FI_DEV_SM_CLOCK"
    assert first["metric"]["node"] == "gke-ml-a3-pool-6917"
    assert first["values"][0] == [1790899203, "345"]
    nv = gzip.decompress(shape_fleet.files("nvidia_smi_csv", "onprem", day)[0].read_bytes())
    head = nv.decode().splitlines()[:2]
    assert head == [
        "timestamp, name, pci.bus_id, index, uuid, utilization.gpu [%], memory.used [MiB], "
        "power.draw [W], clocks.sm [MHz]",
        "2026/10/02 00:00:05.000, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, "
        "GPU-c1308123-428b-5037-1f01-421114139a14, 0 %, 0 MiB, 70.526 W, 345 MHz",
    ]
    csv = pl.read_csv(shape_fleet.files("long_csv", "aws", day)[0].read_bytes(), n_rows=1)
    assert csv.columns[:6] == ["timestamp", "hostname", "gpu", "uuid", "metric", "value"]


def test_configure_points_dcgm_sources_at_the_shape() -> None:
    cfg = {
        "sources": [
            {
                "name": "gke-dcgm",
                "kind": "dcgm",
                "location": "sources/gcp/dcgm/{date}/*.prom.gz",
                "options": {"format": "prometheus_text", "node_label": "node"},
            },
            {"name": "onprem-power", "kind": "power", "location": "sources/onprem/power/x.csv"},
        ]
    }
    out = configure(json.loads(json.dumps(cfg)), "long_parquet")
    assert out["sources"][0]["location"] == "sources/gcp/dcgm/{date}/*.parquet"
    assert out["sources"][0]["options"] == {"format": "long_parquet", "node_label": "node"}
    assert out["sources"][1] == cfg["sources"][1]
    out = configure(json.loads(json.dumps(cfg)), {"gcp": "nvidia_smi_csv"})
    assert out["sources"][0]["location"] == "sources/gcp/dcgm/{date}/*.csv.gz"
    assert out["sources"][0]["options"] == {"format": "nvidia_smi_csv"}
    assert set(EXTENSIONS) == set(SHAPES)
    with pytest.raises(ValueError, match="unknown dcgm_format 'csv'"):
        configure(json.loads(json.dumps(cfg)), "csv")
