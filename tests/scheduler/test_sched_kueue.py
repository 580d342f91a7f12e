"""Kueue Workload dumps → `kueue_workloads`: queue, admission, evictions, requeues, pod sets."""

from __future__ import annotations

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.scheduler.kueue import parse_workloads, pod_template_gpus, read_workloads

T = "2024-07-01T{}Z"


def pod_template(gpus: int | None, *, init_gpus: int | None = None, limit: bool = True) -> dict:
    res: dict[str, Any] = {"requests": {"cpu": "8"}}
    if gpus is not None:
        res.setdefault("limits" if limit else "requests", {})["nvidia.com/gpu"] = str(gpus)
    spec: dict[str, Any] = {"containers": [{"name": "main", "resources": res}]}
    if init_gpus is not None:
        spec["initContainers"] = [
            {"name": "warmup", "resources": {"limits": {"nvidia.com/gpu": str(init_gpus)}}}
        ]
    return {"spec": spec}


def cond(kind: str, status: str, at: str, reason: str = "") -> dict:
    return {
        "type": kind,
        "status": status,
        "lastTransitionTime": T.format(at),
        "reason": reason or kind,
        "message": "",
    }


WORKLOADS: list[dict[str, Any]] = [
    {  # a PyTorchJob: admitted after two preemptions, finished
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": "pytorchjob-llm-7b-3f2a1",
            "namespace": "research",
            "uid": "wl-1",
            "creationTimestamp": T.format("08:00:00"),
            "labels": {"kueue.x-k8s.io/job-uid": "job-1"},
            "ownerReferences": [
                {"kind": "PyTorchJob", "name": "llm-7b", "uid": "job-1", "controller": True}
            ],
        },
        "spec": {
            "queueName": "research",
            "priority": 100,
            "priorityClassName": "training",
            "podSets": [
                {"name": "master", "count": 1, "template": pod_template(8)},
                {"name": "worker", "count": 3, "template": pod_template(8)},
            ],
        },
        "status": {
            "admission": {
                "clusterQueue": "gpu-h100",
                "podSetAssignments": [
                    {
                        "name": "master",
                        "count": 1,
                        "flavors": {"cpu": "default", "nvidia.com/gpu": "h100"},
                        "resourceUsage": {"cpu": "8", "nvidia.com/gpu": "8"},
                    },
                    {
                        "name": "worker",
                        "count": 3,
                        "flavors": {"cpu": "default", "nvidia.com/gpu": "h100"},
                        "resourceUsage": {"cpu": "24", "nvidia.com/gpu": "24"},
                    },
                ],
            },
            "conditions": [
                cond("QuotaReserved", "True", "09:00:00"),
                cond("Admitted", "True", "09:00:01"),
                cond("PodsReady", "True", "09:02:00"),
                cond("Evicted", "False", "08:55:00", "Preempted"),
                cond("Finished", "True", "13:00:00", "Succeeded"),
            ],
            "requeueState": {"count": 2},
            "schedulingStats": {
                "evictions": [{"reason": "Preempted", "underlyingCause": "InCohort", "count": 2}]
            },
            "accumulatedPastExexcutionTimeSeconds": 1200,
        },
    },
    {  # pending: no quota yet
        "kind": "Workload",
        "metadata": {"name": "job-eval", "namespace": "research", "uid": "wl-2"},
        "spec": {
            "queueName": "research",
            "podSets": [{"name": "main", "count": 2, "template": pod_template(1, limit=False)}],
        },
        "status": {
            "conditions": [
                cond("QuotaReserved", "False", "10:00:00", "Pending"),
            ]
        },
    },
    {  # evicted now (pods not ready in time), waiting to be requeued
        "kind": "Workload",
        "metadata": {"name": "job-notebook", "namespace": "notebooks", "uid": "wl-3"},
        "spec": {
            "queueName": "interactive",
            "podSets": [{"name": "main", "count": 1, "template": pod_template(2, init_gpus=4)}],
        },
        "status": {
            "conditions": [
                cond("QuotaReserved", "False", "11:00:00", "Pending"),
                cond("Admitted", "False", "11:00:00", "NoReservation"),
                cond("Evicted", "True", "11:00:00", "PodsReadyTimeout"),
            ],
            "requeueState": {"count": 1, "requeueAt": T.format("11:05:00")},
        },
    },
    {"kind": "Workload", "metadata": {"name": "no-uid"}, "spec": {}},
    {
        "kind": "Workload",
        "metadata": {"name": "bad", "uid": "wl-5"},
        "spec": {"podSets": [{"name": "main", "count": "many", "template": {}}]},
    },
    {"kind": "ConfigMap", "metadata": {"uid": "cm-1"}},
]


def test_workloads_dump(tmp_path: Path) -> None:
    f = tmp_path / "workloads-2024-07-01.json.gz"
    f.write_bytes(
        gzip.compress(json.dumps({"apiVersion": "v1", "kind": "List", "items": WORKLOADS}).encode())
    )
    r = read_workloads(f, source="k", options={"cluster": "eks-a"})
    assert r.rows.schema == polars_schema("kueue_workloads")
    assert r.rows["uid"].to_list() == ["wl-1", "wl-2", "wl-3"]
    assert r.rows["snapshot_at"].unique().to_list() == [
        datetime(2024, 7, 1, 23, 59, 59, tzinfo=UTC)
    ]
    assert r.rows["cluster"].unique().to_list() == ["eks-a"]
    a, b, c = r.rows.iter_rows(named=True)

    at = lambda hms: datetime.fromisoformat(T.format(hms))  # noqa: E731
    assert (a["queue_name"], a["cluster_queue"], a["priority"], a["priority_class"]) == (
        "research",
        "gpu-h100",
        100,
        "training",
    )
    assert (a["owner_kind"], a["owner_name"], a["owner_uid"]) == ("PyTorchJob", "llm-7b", "job-1")
    assert (a["created_at"], a["quota_reserved_at"], a["admitted_at"], a["pods_ready_at"]) == (
        at("08:00:00"),
        at("09:00:00"),
        at("09:00:01"),
        at("09:02:00"),
    )
    assert (a["finished_at"], a["finished_reason"]) == (at("13:00:00"), "Succeeded")
    assert (a["evicted_count"], a["evicted_reason"], a["evicted_at"]) == (2, "Preempted", None)
    assert (a["requeue_count"], a["past_admitted_seconds"]) == (2, 1200)
    assert (a["pod_count"], a["gpus_requested"], a["gpus_admitted"]) == (4, 32, 32)
    assert json.loads(a["flavors"]) == {"cpu": "default", "nvidia.com/gpu": "h100"}
    assert json.loads(a["pod_sets"])[1] == {
        "admitted_count": 3,
        "count": 3,
        "flavors": {"cpu": "default", "nvidia.com/gpu": "h100"},
        "gpus": 24,
        "gpus_per_pod": 8,
        "min_count": None,
        "name": "worker",
    }
    assert json.loads(a["labels"]) == {"kueue.x-k8s.io/job-uid": "job-1"}

    # pending: requests, no admission
    assert (b["cluster_queue"], b["admitted_at"], b["gpus_requested"], b["gpus_admitted"]) == (
        None,
        None,
        2,
        None,
    )
    assert (b["evicted_count"], b["requeue_count"], b["flavors"]) == (0, 0, None)
    # evicted now; the init container's 4 GPUs outweigh the main container's 2
    assert (c["evicted_count"], c["evicted_reason"], c["evicted_at"]) == (
        1,
        "PodsReadyTimeout",
        at("11:00:00"),
    )
    assert (c["requeue_count"], c["requeue_at"], c["gpus_requested"]) == (1, at("11:05:00"), 4)

    assert r.quarantine.select("x_line_number", "reason").rows() == [
        (4, "workload has no metadata.uid"),
        (5, "podSet 'main' count is not a whole number: 'many'"),
        (6, "item is a 'ConfigMap', not a Workload"),
    ]
    assert json.loads(r.quarantine["raw"][0])["metadata"] == {"name": "no-uid"}


def test_pod_gpus_and_bad_documents(tmp_path: Path) -> None:
    assert pod_template_gpus(pod_template(None)) == 0
    both = {"limits": {"nvidia.com/gpu": "2"}, "requests": {"nvidia.com/gpu": "1"}}
    containers = [
        {"name": "a", "resources": both},  # the limit counts
        {"name": "b", "resources": {"requests": {"nvidia.com/gpu": "1"}}},
    ]
    assert pod_template_gpus({"spec": {"containers": containers}}) == 3
    mig = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-3g.40gb": 1}}}]}}
    assert pod_template_gpus(mig, "nvidia.com/mig-3g.40gb") == 1
    one = parse_workloads(
        WORKLOADS[0], source="k", file="f", snapshot_at=datetime(2024, 7, 2, tzinfo=UTC)
    )
    assert one.rows.height == 1
    with pytest.raises(IngestError, match="not a `kubectl get workloads -o json` dump"):
        parse_workloads([1], source="k", file="f", snapshot_at=datetime(2024, 7, 2, tzinfo=UTC))
    bad = tmp_path / "w.json"
    bad.write_text('{"items": [')
    with pytest.raises(IngestError, match=r"w.json, line 1: not valid JSON"):
        read_workloads(bad, source="k")
    ok = tmp_path / "w2.json"
    ok.write_text(json.dumps({"items": WORKLOADS[:1]}))
    r = read_workloads(ok, source="k", options={"snapshot_at": "2024-07-03T00:00:00Z"})
    assert r.rows["snapshot_at"][0] == datetime(2024, 7, 3, tzinfo=UTC)
    assert r.rows.select(pl.col("gpus_admitted")).item() == 32
