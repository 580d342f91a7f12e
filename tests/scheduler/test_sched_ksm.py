"""kube-state-metrics scrapes → `k8s_gpu_requests` (GPU requests per pod and scrape)."""

from __future__ import annotations

import gzip
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl

from fleetledger.config import Config, Source
from ingest.core.landing import polars_schema
from ingest.registry import ingest_source, source_table
from ingest.scheduler.kubernetes_ksm import parse_ksm, read_ksm

SCRAPE = datetime(2024, 7, 1, 12, tzinfo=UTC)
REQ = "kube_pod_container_resource_requests"


def series(**labels: str) -> str:
    return REQ + "{" + ",".join(f'{k}="{v}"' for k, v in labels.items()) + "}"


def gpu(ns: str, pod: str, uid: str, container: str, node: str) -> str:
    return series(
        namespace=ns,
        pod=pod,
        uid=uid,
        container=container,
        node=node,
        resource="nvidia_com_gpu",
        unit="integer",
    )


TEXT = "\n".join(
    [
        "# HELP kube_pod_container_resource_requests The number of requested request resource "
        "by a container.",
        "# TYPE kube_pod_container_resource_requests gauge",
        gpu("ml", "train-0", "u1", "main", "gpu-a01") + " 4",
        gpu("ml", "train-0", "u1", "sidecar", "gpu-a01") + " 1",
        series(namespace="ml", pod="train-0", uid="u1", container="main", node="gpu-a01",
               resource="cpu", unit="core") + " 8",
        series(namespace="ml", pod="train-0", uid="u1", container="main", node="gpu-a01",
               resource="memory", unit="byte") + " 3.4359738368e+10",
        # a timestamped sample (ms), an escaped quote in a label value
        gpu("inference", 'serve-\\"a\\"', "u2", "c", "gpu-b01") + " 1 1719835200000",
        "kube_pod_container_resource_limits" + gpu("ml", "x", "u9", "c", "n")[len(REQ):] + " 4",
        'kube_pod_info{namespace="ml",pod="train-0",uid="u1",node="gpu-a01"} 1',
        gpu("ml", "p2", "u3", "c", "n") + " 0.5",
        gpu("ml", "p3", "u4", "c", "n") + " NaN",
        gpu("ml", "train-0", "u1", "main", "gpu-a01") + " 4",  # the same series again
        series(pod="p5", uid="u5", container="c", resource="nvidia_com_gpu") + " 1",
        REQ + '{namespace="ml" 1',
        # the resource as Kubernetes spells it
        series(namespace="ml", pod="p6", uid="u6", container="c", node="n",
               resource="nvidia.com/gpu") + " 2",
        "",
    ]
)  # fmt: skip


def test_ksm_gpu_requests() -> None:
    r = parse_ksm(TEXT.encode(), source="ksm", file="f.prom", default_time=SCRAPE, cluster="c1")
    assert r.rows.schema == polars_schema("k8s_gpu_requests")
    assert r.rows.select(
        "time", "namespace", "pod", "uid", "node", "containers", "gpus", "x_line_number"
    ).rows() == [
        (SCRAPE, "ml", "train-0", "u1", "gpu-a01", 2, 5, 3),
        (datetime(2024, 7, 1, 12, tzinfo=UTC), "inference", 'serve-"a"', "u2", "gpu-b01", 1, 1, 7),
        (SCRAPE, "ml", "p6", "u6", "n", 1, 2, 15),
    ]  # fmt: skip
    assert set(r.rows["resource"]) == {"nvidia.com/gpu"}
    assert set(r.rows["cluster"]) == {"c1"}
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (10, "GPU request is not a whole number >= 0: 0.5"),
        (11, "value is not a number: NaN"),
        (12, "duplicate container series at the same time"),
        (13, "sample has no namespace or pod label"),
        (14, "unparseable sample line"),
    ]
    # no kube_pod_start_time for any of the three GPU pods (issue 12, item 10)
    assert [(w.check, w.severity, w.count) for w in r.warnings] == [
        ("ksm_pod_start_missing", "warning", 3)
    ]
    assert '(first: inference/serve-"a")' in str(r.warnings[0])


def test_ksm_options_gzip_and_registry(tmp_path: Path) -> None:
    f = tmp_path / "ksm-2024-07-01.prom.gz"
    f.write_bytes(gzip.compress(TEXT.encode()))
    r = read_ksm(
        f,
        source="ksm",
        options={"metric": "kube_pod_container_resource_limits", "scrape_time": SCRAPE},
    )
    assert r.rows.select("pod", "gpus").rows() == [("x", 4)]
    r = read_ksm(f, source="ksm", options={"resource": "cpu", "scrape_time": SCRAPE})
    assert r.rows.select("pod", "gpus", "resource").rows() == [("train-0", 8, "cpu")]
    assert parse_ksm(b"", source="s", file="f", default_time=SCRAPE).rows.height == 0
    # through the registry: the format lands its own table, split by sample day
    src = Source(
        name="ksm",
        kind="kubernetes",
        location=str(f),
        options={"format": "kube_state_metrics", "scrape_time": "2024-07-01T12:00:00Z"},
    )
    assert source_table(src) == "k8s_gpu_requests"
    home = tmp_path / "home"
    report = ingest_source(Config(sources=[src]), src, [date(2024, 7, 1)], home)
    assert (report.table, report.rows_landed, report.rows_quarantined) == (
        "k8s_gpu_requests",
        3,
        5,
    )
    landed = pl.read_parquet(home / "raw/k8s_gpu_requests/ksm/date=2024-07-01/part-0.parquet")
    assert landed["gpus"].sum() == 8
    q = pl.read_parquet(home / "raw/quarantine/ksm/date=2024-07-01/part-0.parquet")
    assert q.height == 5


def test_ksm_large_scrape_is_vectorised() -> None:
    # 20,000 pods x (GPU + cpu + memory) lines: one pass, no per-line Python
    lines = []
    for i in range(20_000):
        labels = dict(namespace=f"ns{i % 7}", pod=f"p{i}", uid=f"u{i}", container="c", node="n1")
        lines.append(series(**labels, resource="nvidia_com_gpu", unit="integer") + " 1")
        lines.append(series(**labels, resource="cpu", unit="core") + " 2")
        lines.append(series(**labels, resource="memory", unit="byte") + " 1e9")
    r = parse_ksm("\n".join(lines).encode(), source="s", file="f", default_time=SCRAPE)
    assert (r.rows.height, r.rows["gpus"].sum(), r.quarantine.height) == (20_000, 20_000, 0)


def test_ksm_pod_phase_times_reason_and_owner() -> None:
    """Issue 12, item 10: each GPU-request row carries the pod's phase, created / start /
    completion times, reason and controller owner from the same scrape (the latest sample at or
    before the request's time); a pod metric line that does not parse, or whose value is not a
    number, is quarantined; the pod metrics of a pod without GPU requests are not rows."""
    t0, t1 = 1_719_835_200_000, 1_719_835_260_000  # 2024-07-01 12:00:00 and 12:01:00 UTC (ms)
    labels = 'namespace="ml",pod="p1",uid="u1"'
    text = "\n".join(
        [
            f'{REQ}{{{labels},container="c",node="n1",resource="nvidia_com_gpu"}} 2 {t0}',
            f'kube_pod_status_phase{{{labels},phase="Pending"}} 0 {t0}',
            f'kube_pod_status_phase{{{labels},phase="Running"}} 1 {t0}',
            f"kube_pod_created{{{labels}}} 1719834000 {t0}",  # 11:40:00
            f"kube_pod_start_time{{{labels}}} 1719834600 {t0}",  # 11:50:00
            f'kube_pod_owner{{{labels},owner_kind="<none>",owner_name="<none>",'
            f'owner_is_controller="false"}} 1 {t0}',
            f'kube_pod_owner{{{labels},owner_kind="Job",owner_name="train",'
            f'owner_is_controller="true"}} 1 {t0}',
            # a minute later: Failed / Evicted, completed 12:00:30
            f'{REQ}{{{labels},container="c",node="n1",resource="nvidia_com_gpu"}} 2 {t1}',
            f'kube_pod_status_phase{{{labels},phase="Running"}} 0 {t1}',
            f'kube_pod_status_phase{{{labels},phase="Failed"}} 1 {t1}',
            f'kube_pod_status_reason{{{labels},reason="NodeLost"}} 0 {t1}',
            f'kube_pod_status_reason{{{labels},reason="Evicted"}} 1 {t1}',
            f"kube_pod_completion_time{{{labels}}} 1719835230 {t1}",
            f"kube_pod_start_time{{{labels}}} NaN {t1}",  # line 14: quarantined
            'kube_pod_status_phase{namespace="ml",pod="cpu",uid="u2",phase="Running"} 1',
            'kube_pod_created{namespace="ml" 1',  # line 16: quarantined
        ]
    )
    r = parse_ksm(text.encode(), source="ksm", file="f.prom", default_time=SCRAPE)
    got = r.rows.select(
        "time", "pod", "gpus", "phase", "created_at", "started_at", "finished_at", "reason",
        "owner_kind", "owner_name",
    ).rows()  # fmt: skip
    start = datetime(2024, 7, 1, 11, 50, tzinfo=UTC)
    assert got == [
        (SCRAPE, "p1", 2, "Running", datetime(2024, 7, 1, 11, 40, tzinfo=UTC), start, None,
         None, "Job", "train"),
        # the start time of 12:01 is NaN (quarantined): the row has none at that time
        (datetime(2024, 7, 1, 12, 1, tzinfo=UTC), "p1", 2, "Failed", None, None,
         datetime(2024, 7, 1, 12, 0, 30, tzinfo=UTC), "Evicted", None, None),
    ]  # fmt: skip
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (14, "value is not a number: NaN"),
        (16, "unparseable sample line"),
    ]
    assert r.warnings == []  # p1's start is known (12:00)
