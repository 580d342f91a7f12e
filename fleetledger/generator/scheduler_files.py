"""Write Slurm `sacct` exports and `kubectl get pods -A -o json` dumps for the synthetic fleet."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fleetledger.generator.model import DAY, Fleet, Run, iso

SACCT_FIELDS = (
    "JobID|JobIDRaw|Cluster|Partition|QOS|Account|Group|GID|User|UID|Submit|Eligible|Start|End|"
    "Elapsed|ExitCode|State|NNodes|NCPUS|ReqCPUS|ReqMem|ReqTRES|AllocTRES|Timelimit|NodeList|"
    "JobName"
)


def _sacct_time(t: int | None) -> str:
    if t is None:
        return "Unknown"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def _elapsed(seconds: int) -> str:
    d, rem = divmod(max(seconds, 0), DAY)
    h, rem = divmod(rem, 3600)
    m, s = divmod(rem, 60)
    return f"{d}-{h:02d}:{m:02d}:{s:02d}" if d else f"{h:02d}:{m:02d}:{s:02d}"


def hostlist(hosts: list[str]) -> str:
    """Compress host names the way Slurm prints them: aws-p5-[01-02]."""
    if not hosts:
        return "None assigned"
    groups: dict[str, list[str]] = {}
    for h in sorted(hosts):
        prefix, num = h.rstrip("0123456789"), h[len(h.rstrip("0123456789")) :]
        groups.setdefault(prefix, []).append(num)
    out = []
    for prefix, nums in groups.items():
        if len(nums) == 1:
            out.append(prefix + nums[0])
            continue
        ranges, start, prev = [], nums[0], nums[0]
        for n in nums[1:] + [None]:  # type: ignore[list-item]
            if n is not None and int(n) == int(prev) + 1:
                prev = n
                continue
            ranges.append(start if start == prev else f"{start}-{prev}")
            if n is not None:
                start = prev = n
        out.append(f"{prefix}[{','.join(ranges)}]")
    return ",".join(out)


def _uid(user: str) -> int:
    return 20000 + sum(map(ord, user)) % 5000


def sacct_line(run: Run, snapshot: int) -> str:
    """One allocation line of `sacct --parsable2` as seen at `snapshot`."""
    k = run.gpus_per_node
    nn = max(len(run.nodes), 1)
    ncpu = 12 * k * nn
    mem = f"{120 * k * nn}G"
    # GPUs as sacct prints them: whole H100s typed `h100`; a MIG instance typed by its profile,
    # the untyped count including it (Slurm with AutoDetect=nvml on a MIG-enabled GPU)
    gres = f"gres/gpu:h100={k * nn},gres/gpu={k * nn}"
    req_gres = f"gres/gpu={k * nn}"
    if run.mig_profile:
        ncpu, mem = 2, "16G"
        gres = req_gres = f"gres/gpu:{run.mig_profile}=1,gres/gpu=1"
    req_tres = f"billing={ncpu},cpu={ncpu},{req_gres},mem={mem},node={nn}"
    pending = run.start is None or run.start >= snapshot
    running = not pending and (run.end is None or run.end > snapshot)
    if pending:
        start = end = None
        elapsed = 0
        state = "PENDING"
        alloc_tres = ""
        nodelist = "None assigned"
        exit_code = "0:0"
    else:
        start = run.start
        end = None if running else run.end
        elapsed = (snapshot if running else run.end) - run.start  # type: ignore[operator]
        state = "RUNNING" if running else run.state
        alloc_tres = f"billing={ncpu},cpu={ncpu},{gres},mem={mem},node={nn}"
        nodelist = hostlist(run.nodes)
        exit_code = "0:0" if running else f"{run.exit_code}:0"
    timelimit = "2-00:00:00" if run.kind == "training" else "12:00:00"
    fields = [
        run.job_id,
        run.job_id_raw,
        run.cluster,
        run.queue,
        "normal",
        run.account,
        run.account,
        str(_uid(run.account)),
        run.user,
        str(_uid(run.user)),
        _sacct_time(run.submitted),
        _sacct_time(run.submitted),
        _sacct_time(start),
        _sacct_time(end),
        _elapsed(elapsed),
        exit_code,
        state,
        str(nn),
        str(ncpu if not pending else 0),
        str(ncpu),
        mem,
        req_tres,
        alloc_tres,
        timelimit,
        nodelist,
        run.name,
    ]
    return "|".join(fields)


def write_sacct(fleet: Fleet, cluster: str, out_dir: Path) -> None:
    """One file per UTC day: the export `sacct -S D -E D+1` run at D+1 00:00:00."""
    out_dir.mkdir(parents=True, exist_ok=True)
    runs = [r for r in fleet.runs if r.scheduler == "slurm" and r.cluster == cluster]
    for d in range(fleet.days):
        a = fleet.t0 + d * DAY
        b = a + DAY
        lines = [SACCT_FIELDS]
        for r in runs:
            if r.submitted >= b:
                continue
            if r.end is not None and r.end < a:
                continue
            if r.start is None and r.submitted >= b:
                continue
            lines.append(sacct_line(r, b))
        day = datetime.fromtimestamp(a, UTC).strftime("%Y-%m-%d")
        (out_dir / f"sacct-{day}.txt").write_text("\n".join(lines) + "\n")


def _pod_json(run: Run, snapshot: int) -> dict:
    gpus = str(run.gpus_per_node)
    resource = f"nvidia.com/mig-{run.mig_profile}" if run.mig_profile else "nvidia.com/gpu"
    if run.mig_profile:
        gpus = "1"
    container = run.pod_name.split("-")[0] if run.pod_name else "main"
    finished = run.end is not None and run.end <= snapshot
    if finished:
        reason = (
            "Error"  # an evicted pod's container is killed: the pod's reason explains it
            if run.pod_reason
            else "OOMKilled"
            if run.exit_code == 137
            else ("Error" if run.exit_code else "Completed")
        )
        phase = "Failed" if run.exit_code else "Succeeded"
        state = {
            "terminated": {
                "containerID": f"containerd://{run.job_id_raw.replace('-', '')}",
                "exitCode": run.exit_code,
                "reason": reason,
                "startedAt": iso(run.start),  # type: ignore[arg-type]
                "finishedAt": iso(run.end),  # type: ignore[arg-type]
            }
        }
    else:
        phase = "Running"
        state = {"running": {"startedAt": iso(run.start)}}  # type: ignore[arg-type]
    status: dict[str, Any] = {
        "phase": phase,
        "hostIP": "10.128.0.12",
        "startTime": iso(run.start),  # type: ignore[arg-type]
        "containerStatuses": [
            {
                "name": container,
                "ready": not finished,
                "restartCount": 0,
                "state": state,
            }
        ],
    }
    if finished and run.pod_reason:
        status["reason"] = run.pod_reason
        status["message"] = "The node was low on resource: memory."
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": run.pod_name,
            "namespace": run.queue,
            "uid": run.job_id_raw,
            "creationTimestamp": iso(run.submitted),
            "labels": run.labels,
        },
        "spec": {
            "nodeName": run.nodes[0],
            "containers": [
                {
                    "name": container,
                    "image": f"us-docker.pkg.dev/fleet-ml-prod/images/{container}:2026.10",
                    "resources": {
                        "limits": {resource: gpus, "memory": "400Gi"},
                        "requests": {resource: gpus, "cpu": "24", "memory": "400Gi"},
                    },
                }
            ],
        },
        "status": status,
    }


def write_pods(fleet: Fleet, out_dir: Path) -> None:
    """One `kubectl get pods -A -o json` per day, taken at 23:59:59 UTC."""
    out_dir.mkdir(parents=True, exist_ok=True)
    pods = [r for r in fleet.runs if r.scheduler == "kubernetes"]
    for d in range(fleet.days):
        a = fleet.t0 + d * DAY
        snap = a + DAY - 1
        items = [
            _pod_json(r, snap)
            for r in pods
            if r.start is not None
            and r.start <= snap
            and (r.end is None or r.end >= a)
            # a deleted pod is in no dump taken after it was deleted
            and not (r.deleted and r.end is not None and r.end <= snap)
        ]
        day = datetime.fromtimestamp(a, UTC).strftime("%Y-%m-%d")
        doc = {
            "apiVersion": "v1",
            "items": items,
            "kind": "List",
            "metadata": {"resourceVersion": ""},
        }
        (out_dir / f"pods-{day}.json").write_text(json.dumps(doc, indent=2))


EVENT_FIELDS = "NodeName|TimeStart|TimeEnd|State|Reason"
XID_REASONS = {
    79: "GPU fell off the bus",
    48: "double-bit ECC error",
    95: "uncontained ECC error",
    119: "GSP RPC timeout",
    120: "GSP error",
}


def write_node_events(fleet: Fleet, src: Path) -> None:
    """`TZ=UTC sacctmgr show event format=NodeName,TimeStart,TimeEnd,State,Reason --parsable2`
    for each Slurm cluster, exported at the end of the window:
    `src/<provider>/sacct/events.txt`. Each outage of fleet.outages is one DOWN event of its
    node; an outage still open at the export has TimeEnd `Unknown`."""
    clusters: dict[str, str] = {}
    for r in fleet.runs:
        if r.scheduler == "slurm":
            clusters.setdefault(r.cluster, "")
    for n in fleet.nodes:
        if n.cluster in clusters:
            clusters[n.cluster] = n.provider
    for cluster, provider in sorted(clusters.items()):
        lines = [EVENT_FIELDS]
        for o in sorted(fleet.outages, key=lambda o: (o.start, o.host)):
            if fleet.node(o.host).cluster != cluster or o.start >= fleet.t1:
                continue
            end = o.end if o.end <= fleet.t1 else None
            reason = f"XID {o.xid} {XID_REASONS.get(o.xid, 'GPU error')} (GPU {o.gpu_index})"
            lines.append(f"{o.host}|{_sacct_time(o.start)}|{_sacct_time(end)}|DOWN|{reason}")
        out = src / provider / "sacct" / "events.txt"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text("\n".join(lines) + "\n")
