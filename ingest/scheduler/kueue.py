"""Kueue `Workload` objects (`kubectl get workloads.kueue.x-k8s.io -A -o json`) →
`kueue_workloads`, one row per workload per dump.

What a row says (FORMATS.md, Kubernetes):
- queue: `spec.queueName` (the LocalQueue), `status.admission.clusterQueue`, priority;
- the life of the workload from `status.conditions` (`lastTransitionTime` of a condition whose
  status is `True`): `QuotaReserved`, `Admitted`, `PodsReady`, `Finished` (its reason:
  `Succeeded` / `Failed`);
- evictions: `status.schedulingStats.evictions[].count` summed when Kueue reports them, else 1
  while an `Evicted` condition is `True`; the reason of the current `Evicted` condition (else of
  the last recorded eviction); requeues: `status.requeueState.count`;
- pod sets as a JSON array (`name, count, min_count, gpus_per_pod, gpus, admitted_count,
  flavors`), with `pod_count` and `gpus_requested` (count × GPUs per pod, summed) and
  `gpus_admitted` (the admission's `resourceUsage` of the GPU resource, null before admission).

GPUs per pod follow the Kubernetes rule for a pod's effective request: the larger of the sum over
`containers` and the largest `initContainers` entry, each container counted by its limit, else its
request, of option `gpu_resource` (default `nvidia.com/gpu`).

Options: `cluster`, `snapshot_at` (default: a file named `workloads-YYYY-MM-DD.json[.gz]` was taken
at 23:59:59Z that day, else the file's mtime), `gpu_resource`.

A workload whose creationTimestamp or condition times are later than the snapshot (plus a few
minutes of clock skew), or whose condition precedes its creation, is quarantined naming the
workload and the field (`requeueState.requeueAt` is a planned time and may lie ahead).
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from typing import Any

from ingest.core.common import ReadResult, k8s_timestamp
from ingest.scheduler.k8s_dumps import dump_rows, load_dump
from ingest.scheduler.k8s_dumps import snapshot_at as dump_snapshot_at
from ingest.scheduler.time_rules import check_not_future, check_order, latest_allowed

TABLE = "kueue_workloads"
GPU_RESOURCE = "nvidia.com/gpu"
_DUMP_NAME = re.compile(r"workloads-(\d{4}-\d{2}-\d{2})\.json(\.gz)?$")
_INT_QUANTITY = re.compile(r"^\s*(\d+)\s*$")


class _WorkloadError(ValueError):
    pass


def _ts(value: Any, what: str) -> datetime | None:
    return k8s_timestamp(value, what, _WorkloadError)


def _count(value: Any, what: str) -> int:
    """A whole-number quantity (`"8"`, `8`); GPUs are never fractional."""
    if isinstance(value, bool):
        raise _WorkloadError(f"{what} is not a whole number: {value!r}")
    if isinstance(value, int):
        n = value
    else:
        m = _INT_QUANTITY.match(str(value))
        if not m:
            raise _WorkloadError(f"{what} is not a whole number: {value!r}")
        n = int(m.group(1))
    if n < 0:
        raise _WorkloadError(f"{what} is negative: {value!r}")
    return n


def _container_gpus(container: dict[str, Any], resource: str) -> int:
    res = container.get("resources") or {}
    limits = res.get("limits") or {}
    requests = res.get("requests") or {}
    name = container.get("name", "?")
    if resource in limits:
        return _count(limits[resource], f"container {name!r} {resource} limit")
    if resource in requests:
        return _count(requests[resource], f"container {name!r} {resource} request")
    return 0


def pod_template_gpus(template: dict[str, Any], resource: str = GPU_RESOURCE) -> int:
    """GPUs one pod of a pod set asks for: max(sum of containers, largest init container)."""
    spec = (template or {}).get("spec") or {}
    main = sum(_container_gpus(c, resource) for c in spec.get("containers") or [])
    init = max((_container_gpus(c, resource) for c in spec.get("initContainers") or []), default=0)
    return max(main, init)


def _conditions(status: dict[str, Any]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for c in status.get("conditions") or []:
        if isinstance(c, dict) and c.get("type"):
            out[str(c["type"])] = c
    return out


def _true_at(conds: dict[str, dict[str, Any]], kind: str) -> datetime | None:
    c = conds.get(kind)
    if c is None or str(c.get("status")) != "True":
        return None
    return _ts(c.get("lastTransitionTime"), f"condition {kind} lastTransitionTime")


def _check_times(row: dict[str, Any], snapshot_at: datetime) -> None:
    """No time later than the snapshot (requeueAt is when Kueue will requeue: it may be),
    and no condition before the workload was created."""
    created = ("creationTimestamp", row["created_at"])
    conditions = [
        ("condition QuotaReserved", row["quota_reserved_at"]),
        ("condition Admitted", row["admitted_at"]),
        ("condition PodsReady", row["pods_ready_at"]),
        ("condition Finished", row["finished_at"]),
        ("condition Evicted", row["evicted_at"]),
    ]
    who = f"workload {row['namespace']}/{row['name']} (uid {row['uid']})"
    try:
        check_not_future(
            [created, *conditions],
            latest_allowed(snapshot_at),
            "the dump's snapshot time",
            _WorkloadError,
        )
        for c in conditions:
            check_order([created, c], _WorkloadError)
    except _WorkloadError as err:
        raise _WorkloadError(f"{who}: {err}") from None


def _row(wl: dict[str, Any], resource: str) -> dict[str, Any]:
    if not isinstance(wl, dict):
        raise _WorkloadError("item is not an object")
    if wl.get("kind") not in (None, "Workload"):
        raise _WorkloadError(f"item is a {wl.get('kind')!r}, not a Workload")
    meta = wl.get("metadata") or {}
    spec = wl.get("spec") or {}
    status = wl.get("status") or {}
    uid = meta.get("uid")
    if not uid:
        raise _WorkloadError("workload has no metadata.uid")
    conds = _conditions(status)
    admission = status.get("admission") or {}
    assignments = {
        a.get("name"): a for a in admission.get("podSetAssignments") or [] if isinstance(a, dict)
    }

    pod_sets: list[dict[str, Any]] = []
    gpus_requested = pod_count = 0
    for ps in spec.get("podSets") or []:
        name = ps.get("name")
        count = _count(ps.get("count", 1), f"podSet {name!r} count")
        per_pod = pod_template_gpus(ps.get("template") or {}, resource)
        assigned = assignments.get(name) or {}
        admitted_count = assigned.get("count")
        pod_sets.append(
            {
                "name": name,
                "count": count,
                "min_count": ps.get("minCount"),
                "gpus_per_pod": per_pod,
                "gpus": count * per_pod,
                "admitted_count": (
                    _count(admitted_count, f"podSetAssignment {name!r} count")
                    if admitted_count is not None
                    else None
                ),
                "flavors": assigned.get("flavors") or None,
            }
        )
        pod_count += count
        gpus_requested += count * per_pod

    gpus_admitted: int | None = None
    flavors: dict[str, str] = {}
    if admission:
        gpus_admitted = 0
        for a in assignments.values():
            usage = a.get("resourceUsage") or {}
            if resource in usage:
                gpus_admitted += _count(usage[resource], f"resourceUsage {resource}")
            for res, flavor in (a.get("flavors") or {}).items():
                flavors.setdefault(str(res), str(flavor))

    stats = (status.get("schedulingStats") or {}).get("evictions") or []
    evicted = conds.get("Evicted")
    evicted_now = evicted is not None and str(evicted.get("status")) == "True"
    if stats:
        evicted_count = sum(_count(e.get("count", 0), "eviction count") for e in stats)
    else:
        evicted_count = 1 if evicted_now else 0
    if evicted_now and evicted is not None:
        evicted_reason = evicted.get("reason")
    elif stats:
        evicted_reason = stats[-1].get("reason")
    else:
        evicted_reason = None

    finished = conds.get("Finished")
    finished_at = _true_at(conds, "Finished")
    requeue = status.get("requeueState") or {}
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    past = status.get(
        "accumulatedPastExexcutionTimeSeconds", status.get("accumulatedPastExecutionTimeSeconds")
    )
    priority = spec.get("priority")
    return {
        "uid": uid,
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "queue_name": spec.get("queueName"),
        "cluster_queue": admission.get("clusterQueue"),
        "priority": int(priority) if priority is not None else None,
        "priority_class": spec.get("priorityClassName"),
        "owner_kind": owner.get("kind"),
        "owner_name": owner.get("name"),
        "owner_uid": owner.get("uid"),
        "created_at": _ts(meta.get("creationTimestamp"), "creationTimestamp"),
        "quota_reserved_at": _true_at(conds, "QuotaReserved"),
        "admitted_at": _true_at(conds, "Admitted"),
        "pods_ready_at": _true_at(conds, "PodsReady"),
        "finished_at": finished_at,
        "finished_reason": finished.get("reason") if finished_at and finished else None,
        "evicted_count": evicted_count,
        "evicted_reason": evicted_reason,
        "evicted_at": _true_at(conds, "Evicted"),
        "requeue_count": _count(requeue.get("count") or 0, "requeueState.count"),
        "requeue_at": _ts(requeue.get("requeueAt"), "requeueState.requeueAt"),
        "past_admitted_seconds": int(past) if past is not None else None,
        "pod_sets": json.dumps(pod_sets, sort_keys=True),
        "pod_count": pod_count,
        "gpus_requested": gpus_requested,
        "gpus_admitted": gpus_admitted,
        "flavors": json.dumps(flavors, sort_keys=True) if flavors else None,
        "labels": json.dumps(meta.get("labels") or {}, sort_keys=True),
    }


def _checked(row: dict[str, Any], snapshot_at: datetime) -> dict[str, Any]:
    _check_times(row, snapshot_at)
    return row


def parse_workloads(
    doc: Any,
    *,
    source: str,
    file: str,
    snapshot_at: datetime,
    cluster: str | None = None,
    gpu_resource: str = GPU_RESOURCE,
) -> ReadResult:
    """Rows of a parsed `kubectl get workloads -o json` document (a List or one Workload)."""
    return dump_rows(
        doc,
        kind="Workload",
        table=TABLE,
        row=lambda wl: _checked(_row(wl, gpu_resource), snapshot_at),
        errors=(_WorkloadError, TypeError, AttributeError, ValueError),
        item_error=_WorkloadError,
        common={"cluster": cluster, "snapshot_at": snapshot_at},
        source=source,
        file=file,
    )


def read_workloads(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one workloads dump (plain or gzip). `x_line_number` is the workload's 1-based index
    in `items`. Raises IngestError when the file is not JSON or not a workloads list."""
    path = Path(path)
    options = options or {}
    doc = load_dump(path, options)
    cluster = options.get("cluster")
    return parse_workloads(
        doc,
        source=source,
        file=str(path),
        snapshot_at=dump_snapshot_at(path, options, _DUMP_NAME),
        cluster=str(cluster) if cluster is not None else None,
        gpu_resource=str(options.get("gpu_resource", GPU_RESOURCE)),
    )
