from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

import pytest

from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.scheduler.kubernetes import read_pods


def _container(name: str, limits: dict | None = None, requests: dict | None = None) -> dict:
    return {
        "name": name,
        "image": "nvcr.io/nvidia/pytorch:24.05-py3",
        "resources": {"limits": limits or {}, "requests": requests or {}},
    }


def _terminated(name: str, code: int, reason: str, started: str, finished: str) -> dict:
    return {
        "name": name,
        "ready": False,
        "restartCount": 0,
        "state": {
            "terminated": {
                "exitCode": code,
                "reason": reason,
                "startedAt": started,
                "finishedAt": finished,
                "containerID": f"containerd://{name}",
            }
        },
    }


PODS = {
    "apiVersion": "v1",
    "kind": "List",
    "metadata": {"resourceVersion": ""},
    "items": [
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "llm-pretrain-0",
                "namespace": "research",
                "uid": "0b9f7f9e-0000-4000-8000-000000000001",
                "creationTimestamp": "2026-11-02T08:00:00Z",
                "labels": {"app": "llm-pretrain", "team": "research"},
            },
            "spec": {
                "nodeName": "gke-ml-a3-pool-6917",
                "containers": [
                    _container("trainer", limits={"nvidia.com/gpu": "4", "cpu": "32"}),
                    _container("helper", requests={"nvidia.com/gpu": "2"}),
                ],
            },
            "status": {
                "phase": "Succeeded",
                "startTime": "2026-11-02T08:00:05Z",
                "containerStatuses": [
                    _terminated(
                        "trainer", 0, "Completed", "2026-11-02T08:00:10Z", "2026-11-02T12:30:00Z"
                    ),
                    _terminated(
                        "helper", 0, "Completed", "2026-11-02T08:00:10Z", "2026-11-02T12:31:00Z"
                    ),
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "vllm-server-7d9c",
                "namespace": "inference",
                "uid": "0b9f7f9e-0000-4000-8000-000000000002",
                "creationTimestamp": "2026-11-01T00:00:00Z",
                "labels": {"app": "vllm"},
            },
            "spec": {
                "nodeName": "gke-ml-a3-pool-93c7",
                "containers": [
                    _container(
                        "vllm", limits={"nvidia.com/gpu": "1"}, requests={"nvidia.com/gpu": "1"}
                    )
                ],
            },
            "status": {
                "phase": "Running",
                "startTime": "2026-11-01T00:00:03Z",
                "containerStatuses": [
                    {
                        "name": "vllm",
                        "ready": True,
                        "state": {"running": {"startedAt": "2026-11-01T00:00:09Z"}},
                    }
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "finetune-oom",
                "namespace": "research",
                "uid": "0b9f7f9e-0000-4000-8000-000000000003",
                "creationTimestamp": "2026-11-02T09:00:00Z",
            },
            "spec": {
                "nodeName": "gke-ml-a3-pool-93c7",
                "containers": [
                    _container("main", limits={"nvidia.com/gpu": 2}),
                    _container("sidecar"),
                ],
            },
            "status": {
                "phase": "Failed",
                "startTime": "2026-11-02T09:00:02Z",
                "containerStatuses": [
                    _terminated(
                        "main", 137, "OOMKilled", "2026-11-02T09:00:05Z", "2026-11-02T09:40:00Z"
                    ),
                    _terminated(
                        "sidecar", 0, "Completed", "2026-11-02T09:00:05Z", "2026-11-02T09:40:02Z"
                    ),
                ],
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "notebook-anna",
                "namespace": "research-notebooks",
                "uid": "0b9f7f9e-0000-4000-8000-000000000004",
                "creationTimestamp": "2026-11-02T23:50:00Z",
            },
            "spec": {"containers": [_container("jupyter", requests={"nvidia.com/gpu": "1"})]},
            "status": {"phase": "Pending"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "broken",
                "namespace": "x",
                "uid": "0b9f7f9e-0000-4000-8000-000000000005",
                "creationTimestamp": "2026-11-02T10:00:00Z",
            },
            "spec": {"containers": [_container("c", limits={"nvidia.com/gpu": "lots"})]},
            "status": {"phase": "Pending"},
        },
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "evicted",
                "namespace": "batch",
                "uid": "0b9f7f9e-0000-4000-8000-000000000006",
                "creationTimestamp": "2026-11-02T01:00:00Z",
            },
            "spec": {"nodeName": "n1", "containers": [_container("c")]},
            "status": {"phase": "Failed", "reason": "Evicted", "startTime": "2026-11-02T01:00:01Z"},
        },
    ],
}


def test_pods_dump(tmp_path: Path) -> None:
    f = tmp_path / "pods-2026-11-02.json"
    f.write_text(json.dumps(PODS, indent=1))
    r = read_pods(f, source="gke", options={"cluster": "gke-ml"})
    assert r.rows.schema == polars_schema("k8s_pods")
    snap = datetime(2026, 11, 2, 23, 59, 59, tzinfo=UTC)
    assert set(r.rows["snapshot_at"]) == {snap}
    assert set(r.rows["cluster"]) == {"gke-ml"}
    got = r.rows.select(
        "name", "node", "phase", "gpus", "finished_at", "exit_code", "reason", "x_line_number"
    ).rows()
    assert got == [
        (
            "llm-pretrain-0",
            "gke-ml-a3-pool-6917",
            "Succeeded",
            6,
            datetime(2026, 11, 2, 12, 31, tzinfo=UTC),
            0,
            "Completed",
            1,
        ),
        ("vllm-server-7d9c", "gke-ml-a3-pool-93c7", "Running", 1, None, None, None, 2),
        (
            "finetune-oom",
            "gke-ml-a3-pool-93c7",
            "Failed",
            2,
            datetime(2026, 11, 2, 9, 40, 2, tzinfo=UTC),
            137,
            "OOMKilled",
            3,
        ),
        ("notebook-anna", None, "Pending", 1, None, None, None, 4),
        ("evicted", "n1", "Failed", 0, None, None, "Evicted", 6),
    ]
    first = r.rows.row(0, named=True)
    assert first["uid"] == "0b9f7f9e-0000-4000-8000-000000000001"
    assert first["created_at"] == datetime(2026, 11, 2, 8, tzinfo=UTC)
    assert first["started_at"] == datetime(2026, 11, 2, 8, 0, 5, tzinfo=UTC)
    assert json.loads(first["labels"]) == {"app": "llm-pretrain", "team": "research"}
    assert r.rows["labels"][2] == "{}"
    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (5, "container 'c': nvidia.com/gpu is not an integer: 'lots'")
    ]
    assert '"name": "broken"' in r.quarantine["raw"][0]


def test_snapshot_time_option_and_mtime(tmp_path: Path) -> None:
    f = tmp_path / "dump.json"
    f.write_text(json.dumps(PODS))
    r = read_pods(f, source="gke", options={"snapshot_at": "2026-11-03T06:00:00Z"})
    assert set(r.rows["snapshot_at"]) == {datetime(2026, 11, 3, 6, tzinfo=UTC)}
    assert r.rows["cluster"].null_count() == r.rows.height
    r = read_pods(f, source="gke")
    mtime = datetime.fromtimestamp(f.stat().st_mtime, tz=UTC)
    assert abs((r.rows["snapshot_at"][0] - mtime).total_seconds()) < 1e-3


def test_not_json(tmp_path: Path) -> None:
    f = tmp_path / "pods-2026-11-02.json"
    f.write_text('{"items": [\n  {"metadata": }\n]}')
    with pytest.raises(IngestError, match=r"pods-2026-11-02\.json, line 2: not valid JSON"):
        read_pods(f, source="gke")
    f.write_text('{"kind": "NodeList"}')
    with pytest.raises(IngestError, match="not a `kubectl get pods -o json` dump"):
        read_pods(f, source="gke")
