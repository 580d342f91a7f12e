"""A hand-made Kubernetes fleet for issue 12, items 1, 2 and 10 (built by
test_sched_pod_lifecycle_warehouse.py): pod dumps of cluster `gke-a`, Kueue workloads of the same
cluster, and kube-state-metrics scrapes of cluster `ksm-1` (which has no pod dumps) and of
`gke-a` (which has: they must be ignored). Three accounted days D1-D3; every node is billed by a
daily FOCUS line, so a GPU-hour costs `rate` below.

Nodes (inventory), GPUs, $ per GPU-hour:
- k8s-a: 1 GPU, $24/day = $1/GPU-h. A rolling update: `web-old` Running in the dumps of D1 and
  D2, missing from D3's; `web-new` started D3 06:00, Running in D3's dump.
- k8s-b: 1 GPU, $48/day = $2/GPU-h. `adhoc` started D1 12:00, Running on D1, deleted (missing
  from D2's dump). `queued`: a Pending pod (2 GPUs, no node) created D1 20:00, missing from
  D2's dump.
- k8s-c: 2 GPUs, $48/day = $1/GPU-h. `evicted` (D1 00:00-10:00, Failed, reason Evicted, its
  container `Error` 137); `oom` (D1 00:00-04:00, Failed, OOMKilled 137); `lost` (started D1
  12:00, Running on D1, Failed / NodeLost with no containerStatuses on D2); `train-1-worker`,
  the pod of Kueue workload `train-1-wl` (Job `train-1`): created D2 02:02, started D2 02:05,
  Succeeded D2 08:00.
- k8s-k: 1 GPU, $24/day = $1/GPU-h, cluster `ksm-1` seen by kube-state-metrics only: `k-train`
  started D1 01:00, completed D1 15:00 (Succeeded in the 18:00 scrape); `k-serve` started D1
  16:00, Running at 18:00, missing from the scrape of D2 06:00.
Kueue (cluster gke-a): `train-1-wl` created D1 22:00, admitted D2 02:00, finished D2 08:00,
evicted once and requeued once before its admission (its D2 dump); gone from D3's dump.
`big-wl` (8 GPUs) created D3 10:00, never admitted.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

D1, D2, D3 = date(2026, 11, 16), date(2026, 11, 17), date(2026, 11, 18)
DAYS = (D1, D2, D3)
T1 = datetime(2026, 11, 16, tzinfo=UTC)
H = timedelta(hours=1)


def iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%SZ")


def at(day: int, hour: float) -> datetime:
    """`day` 1-3, `hour` of that day."""
    return T1 + timedelta(days=day - 1) + timedelta(hours=hour)


def pod(
    name: str,
    node: str | None,
    gpus: int,
    created: datetime,
    phase: str,
    *,
    started: datetime | None = None,
    finished: datetime | None = None,
    exit_code: int = 0,
    container_reason: str | None = None,
    pod_reason: str | None = None,
    statuses: bool = True,
    owner: dict[str, Any] | None = None,
) -> dict[str, Any]:
    status: dict[str, Any] = {"phase": phase}
    if started:
        status["startTime"] = iso(started)
    if pod_reason:
        status["reason"] = pod_reason
    if statuses and started:
        state: dict[str, Any] = {"running": {"startedAt": iso(started)}}
        if finished:
            state = {
                "terminated": {
                    "exitCode": exit_code,
                    "reason": container_reason or "Completed",
                    "startedAt": iso(started),
                    "finishedAt": iso(finished),
                }
            }
        status["containerStatuses"] = [{"name": "main", "state": state}]
    meta: dict[str, Any] = {
        "name": name,
        "namespace": "ml",
        "uid": f"u-{name}",
        "creationTimestamp": iso(created),
        "labels": {"app": name},
    }
    if owner:
        meta["ownerReferences"] = [{**owner, "controller": True}]
    spec: dict[str, Any] = {
        "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]
    }
    if node:
        spec["nodeName"] = node
    return {"kind": "Pod", "metadata": meta, "spec": spec, "status": status}


JOB = {"apiVersion": "batch/v1", "kind": "Job", "name": "train-1", "uid": "job-train-1"}
OLD = pod("web-old", "k8s-a", 1, at(1, 0), "Running", started=at(1, 0))
NEW = pod("web-new", "k8s-a", 1, at(3, 5 + 55 / 60), "Running", started=at(3, 6))
ADHOC = pod("adhoc", "k8s-b", 1, at(1, 12), "Running", started=at(1, 12))
QUEUED = pod("queued", None, 2, at(1, 20), "Pending")
EVICTED = pod(
    "evicted", "k8s-c", 1, at(1, 0), "Failed", started=at(1, 0), finished=at(1, 10),
    exit_code=137, container_reason="Error", pod_reason="Evicted",
)  # fmt: skip
OOM = pod(
    "oom", "k8s-c", 1, at(1, 0), "Failed", started=at(1, 0), finished=at(1, 4),
    exit_code=137, container_reason="OOMKilled",
)  # fmt: skip
LOST_D1 = pod("lost", "k8s-c", 1, at(1, 12), "Running", started=at(1, 12))
LOST_D2 = pod(
    "lost", "k8s-c", 1, at(1, 12), "Failed", started=at(1, 12), pod_reason="NodeLost",
    statuses=False,
)  # fmt: skip
KQ = pod(
    "train-1-worker", "k8s-c", 1, at(2, 2 + 2 / 60), "Succeeded", started=at(2, 2 + 5 / 60),
    finished=at(2, 8), owner=JOB,
)  # fmt: skip

POD_DUMPS = {
    D1: [OLD, ADHOC, QUEUED, EVICTED, OOM, LOST_D1],
    D2: [OLD, LOST_D2, KQ],
    D3: [NEW],
}


def cond(kind: str, t: datetime, reason: str = "") -> dict[str, Any]:
    return {"type": kind, "status": "True", "lastTransitionTime": iso(t), "reason": reason or kind}


def workload(
    name: str, uid: str, created: datetime, gpus: int, status: dict[str, Any], owner: dict
) -> dict[str, Any]:
    template = {
        "spec": {
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]
        }
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": uid,
            "creationTimestamp": iso(created),
            "ownerReferences": [{**owner, "controller": True}],
        },
        "spec": {
            "queueName": "team-a-queue",
            "podSets": [{"name": "main", "count": 1, "template": template}],
        },
        "status": status,
    }


ADMISSION = {
    "clusterQueue": "gpu-cq",
    "podSetAssignments": [
        {"name": "main", "count": 1, "flavors": {"nvidia.com/gpu": "a100"},
         "resourceUsage": {"nvidia.com/gpu": "1"}}
    ],
}  # fmt: skip
WL_D1 = workload("train-1-wl", "wl-1", at(1, 22), 1, {}, JOB)
WL_D2 = workload(
    "train-1-wl",
    "wl-1",
    at(1, 22),
    1,
    {
        "admission": ADMISSION,
        "conditions": [
            cond("QuotaReserved", at(2, 2)),
            cond("Admitted", at(2, 2)),
            cond("Finished", at(2, 8), "Succeeded"),
        ],
        "schedulingStats": {"evictions": [{"reason": "Preempted", "count": 1}]},
        "requeueState": {"count": 1},
    },
    JOB,
)
BIG = workload(
    "big-wl",
    "wl-big",
    at(3, 10),
    8,
    {},
    {"apiVersion": "batch/v1", "kind": "Job", "name": "big", "uid": "job-big"},
)
WORKLOAD_DUMPS = {D1: [WL_D1], D2: [WL_D2], D3: [BIG]}

REQ = "kube_pod_container_resource_requests"


def ksm_lines(ns: str, name: str, uid: str, node: str, t: datetime, phase: str, **times: datetime):
    labels = f'namespace="{ns}",pod="{name}",uid="{uid}"'
    ms = int(t.timestamp() * 1000)
    out = [
        f'{REQ}{{{labels},container="main",node="{node}",resource="nvidia_com_gpu",'
        f'unit="integer"}} 1 {ms}',
        f'kube_pod_container_resource_requests{{{labels},container="main",node="{node}",'
        f'resource="cpu",unit="core"}} 4 {ms}',
        f'kube_pod_owner{{{labels},owner_kind="ReplicaSet",owner_name="rs-{name}",'
        f'owner_is_controller="true"}} 1 {ms}',
    ]
    for p in ("Pending", "Running", "Succeeded", "Failed", "Unknown"):
        out.append(f'kube_pod_status_phase{{{labels},phase="{p}"}} {1 if p == phase else 0} {ms}')
    metric = {
        "created": "kube_pod_created",
        "started": "kube_pod_start_time",
        "completed": "kube_pod_completion_time",
    }
    for key, value in times.items():
        out.append(f"{metric[key]}{{{labels}}} {value.timestamp():.0f} {ms}")
    return out


def ksm_text() -> str:
    lines = [
        "# HELP kube_pod_status_phase The pods current phase.",
        "# TYPE kube_pod_status_phase gauge",
    ]
    train = dict(created=at(1, 0.5), started=at(1, 1))
    serve = dict(created=at(1, 15.5), started=at(1, 16))
    for h in (6, 12):
        lines += ksm_lines("ml", "k-train", "uk-train", "k8s-k", at(1, h), "Running", **train)
    lines += ksm_lines(
        "ml", "k-train", "uk-train", "k8s-k", at(1, 18), "Succeeded", **train, completed=at(1, 15)
    )
    lines += ksm_lines("ml", "k-serve", "uk-serve", "k8s-k", at(1, 18), "Running", **serve)
    # the scrape of D2 06:00 shows another (CPU-only) pod but neither GPU pod
    lines.append(
        f'kube_pod_status_phase{{namespace="ml",pod="cpu-only",uid="uk-cpu",phase="Running"}} 1 '
        f"{int(at(2, 6).timestamp() * 1000)}"
    )
    lines.append(
        f'{REQ}{{namespace="ml",pod="tiny",uid="uk-tiny",container="c",node="k8s-k",'
        f'resource="nvidia_com_gpu",unit="integer"}} 0 {int(at(2, 6).timestamp() * 1000)}'
    )
    return "\n".join(lines) + "\n"


def gke_ksm_text() -> str:
    """kube-state-metrics of gke-a, which has pod dumps: ignored for runs."""
    return (
        "\n".join(
            ksm_lines("ml", "web-new", "u-web-new", "k8s-a", at(3, 12), "Running", started=at(3, 6))
            + ksm_lines("ml", "stray", "u-stray", "k8s-a", at(3, 12), "Running", started=at(3, 7))
        )
        + "\n"
    )


def write_sources(folder: Path) -> dict[str, Path]:
    """Pod dumps, workload dumps and scrapes under `folder`; the location of each."""
    pods, wls = folder / "pods", folder / "kueue"
    pods.mkdir(parents=True)
    wls.mkdir(parents=True)
    for day, items in POD_DUMPS.items():
        doc = {"apiVersion": "v1", "kind": "List", "items": items}
        (pods / f"pods-{day}.json").write_text(json.dumps(doc))
    for day, items in WORKLOAD_DUMPS.items():
        doc = {"apiVersion": "v1", "kind": "List", "items": items}
        (wls / f"workloads-{day}.json").write_text(json.dumps(doc))
    (folder / "ksm-1.prom").write_text(ksm_text())
    (folder / "ksm-gke.prom").write_text(gke_ksm_text())
    return {
        "pods": pods / "pods-{date}.json",
        "kueue": wls / "workloads-{date}.json",
        "ksm": folder / "ksm-1.prom",
        "ksm_gke": folder / "ksm-gke.prom",
    }
