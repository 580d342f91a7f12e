"""`kubectl get pods -A -o json` dumps → `k8s_pods` (one row per pod per dump).

Options (`Source.options`):
- `cluster`: the cluster name written in every row (default null).
- `snapshot_at`: when the dump was taken. Default: a file named `pods-YYYY-MM-DD.json` was
  taken at 23:59:59Z that day; otherwise the file's mtime.

An item without `spec` or `status`, or whose creationTimestamp, startTime or finishedAt is
later than the snapshot (plus a few minutes of clock skew) or out of order (created, started,
finished), is quarantined naming the pod and the field; the dump's other pods land.
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

TABLE = "k8s_pods"
GPU_RESOURCE = "nvidia.com/gpu"
# MIG devices under the mixed strategy: nvidia.com/mig-<slices>g.<memory>gb
MIG_RESOURCE = re.compile(r"^nvidia\.com/mig-(\d+)g\.")
_DUMP_NAME = re.compile(r"pods-(\d{4}-\d{2}-\d{2})\.json(\.gz)?$")


class _PodError(ValueError):
    pass


def _ts(value: Any, what: str) -> datetime | None:
    return k8s_timestamp(value, what, _PodError)


def _gpu_count(value: Any, container: str) -> int:
    try:
        n = int(str(value).strip())
    except ValueError:
        raise _PodError(
            f"container {container!r}: {GPU_RESOURCE} is not an integer: {value!r}"
        ) from None
    if n < 0:
        raise _PodError(f"container {container!r}: negative {GPU_RESOURCE}: {value!r}")
    return n


def _pod_gpus(spec: dict[str, Any]) -> int:
    total = 0
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        limits = res.get("limits") or {}
        requests = res.get("requests") or {}
        if GPU_RESOURCE in limits:
            total += _gpu_count(limits[GPU_RESOURCE], c.get("name", "?"))
        elif GPU_RESOURCE in requests:
            total += _gpu_count(requests[GPU_RESOURCE], c.get("name", "?"))
    return total


def _pod_mig_slices(spec: dict[str, Any]) -> int:
    """Compute slices of the MIG devices a pod asks for: `nvidia.com/mig-3g.40gb: 1` -> 3."""
    total = 0
    for c in spec.get("containers") or []:
        res = c.get("resources") or {}
        wanted = res.get("limits") or res.get("requests") or {}
        for name, value in wanted.items():
            m = MIG_RESOURCE.match(name)
            if m:
                total += int(m.group(1)) * _gpu_count(value, c.get("name", "?"))
    return total


def _pod_reason(status: dict[str, Any]) -> str | None:
    """Why the pod as a whole stopped, when Kubernetes says so: `status.reason` (`Evicted`,
    `NodeLost`, `UnexpectedAdmissionError`, `Preempting`, `Shutdown`), else the reason of a
    `DisruptionTarget` condition that is True (`PreemptionByScheduler`,
    `DeletionByTaintManager`, `EvictionByEvictionAPI`, `TerminationByKubelet`)."""
    if status.get("reason"):
        return str(status["reason"])
    for c in status.get("conditions") or []:
        if (
            isinstance(c, dict)
            and c.get("type") == "DisruptionTarget"
            and str(c.get("status")) == "True"
            and c.get("reason")
        ):
            return str(c["reason"])
    return None


def _termination(status: dict[str, Any]) -> tuple[datetime | None, int | None, str | None]:
    """finished_at, exit_code, reason: when every container has terminated. The pod-level
    reason (an eviction, a lost node) explains the pod before its containers' reasons do: an
    evicted pod's containers end with `Error` or `ContainerStatusUnknown`."""
    statuses = status.get("containerStatuses") or []
    terminated = [((s.get("state") or {}).get("terminated")) for s in statuses]
    reason = _pod_reason(status)
    if not statuses or any(t is None for t in terminated):
        return None, None, reason
    finished = [_ts(t.get("finishedAt"), "finishedAt") for t in terminated]
    known = [f for f in finished if f is not None]
    finished_at = max(known) if known else None
    # the first container that failed explains the pod; else the one that finished last
    failed = [t for t in terminated if (t.get("exitCode") or 0) != 0]
    if failed:
        chosen = failed[0]
    else:
        chosen = terminated[finished.index(finished_at)] if finished_at else terminated[-1]
    exit_code = chosen.get("exitCode")
    return (
        finished_at,
        (int(exit_code) if exit_code is not None else None),
        (reason or chosen.get("reason")),
    )


def _row(pod: Any, snapshot_at: datetime) -> dict[str, Any]:
    """The columns of one pod (the reader adds cluster, snapshot and lineage). A pod without
    `spec` or `status` says nothing about its node, GPUs or life: it is quarantined, naming the
    pod and the field, rather than landed as a pod that never started."""
    if not isinstance(pod, dict):
        raise _PodError("item is not an object")
    meta = pod.get("metadata") or {}
    uid = meta.get("uid")
    if not uid:
        raise _PodError("pod has no metadata.uid")
    who = f"pod {meta.get('namespace')}/{meta.get('name')} (uid {uid})"
    for part in ("spec", "status"):
        if not isinstance(pod.get(part), dict) or not pod[part]:
            raise _PodError(f"{who} has no {part}")
    spec, status = pod["spec"], pod["status"]
    owners = [o for o in meta.get("ownerReferences") or [] if isinstance(o, dict)]
    owner = next((o for o in owners if o.get("controller")), owners[0] if owners else {})
    finished_at, exit_code, reason = _termination(status)
    times = [
        ("creationTimestamp", _ts(meta.get("creationTimestamp"), "creationTimestamp")),
        ("startTime", _ts(status.get("startTime"), "startTime")),
        ("finishedAt", finished_at),
    ]
    try:
        check_not_future(times, latest_allowed(snapshot_at), "the dump's snapshot time", _PodError)
        check_order(times, _PodError)
    except _PodError as err:
        raise _PodError(f"{who}: {err}") from None
    return {
        "uid": uid,
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "node": spec.get("nodeName"),
        "phase": status.get("phase"),
        "created_at": times[0][1],
        "started_at": times[1][1],
        "finished_at": finished_at,
        "gpus": _pod_gpus(spec),
        "mig_slices": _pod_mig_slices(spec),
        "labels": json.dumps(meta.get("labels") or {}, sort_keys=True),
        "exit_code": exit_code,
        "reason": reason,
        "owner_kind": owner.get("kind"),
        "owner_name": owner.get("name"),
        "owner_uid": owner.get("uid"),
    }


def parse_pods(
    doc: Any,
    *,
    source: str,
    file: str,
    snapshot_at: datetime,
    cluster: str | None = None,
) -> ReadResult:
    """Rows of a parsed `kubectl get pods -o json` document (a List or a single Pod)."""
    return dump_rows(
        doc,
        kind="Pod",
        table=TABLE,
        row=lambda pod: _row(pod, snapshot_at),
        errors=(_PodError, TypeError, AttributeError),
        item_error=_PodError,
        common={"cluster": cluster, "snapshot_at": snapshot_at},
        source=source,
        file=file,
    )


def read_pods(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
) -> ReadResult:
    """Read one pods dump file (plain or gzip). `x_line_number` is the pod's 1-based index in
    `items`. Raises IngestError when the file is not JSON or not a pods list."""
    path = Path(path)
    options = options or {}
    doc = load_dump(path, options)
    cluster = options.get("cluster")
    return parse_pods(
        doc,
        source=source,
        file=str(path),
        snapshot_at=dump_snapshot_at(path, options, _DUMP_NAME),
        cluster=str(cluster) if cluster is not None else None,
    )
