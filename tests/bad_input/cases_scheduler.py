"""Corpus cases for the scheduler kinds: `slurm` (sacct files, sacctmgr events), `kubernetes`
(pod dumps), `kueue` (workload dumps) and `run_logs` (checkpoint markers). Counts: one sacct
line is one allocation, one pod or workload item one row, one marker line one checkpoint."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

from inputs import (
    D1,
    D2,
    SACCT_HEADER,
    pod,
    pods_file,
    sacct_file,
    sacct_line,
    samples_dir,
    source,
    write,
)
from runner import Case, Expect, Setup

DAYS = (D1,)
SLURM = source("slurm", "slurm", "sacct/sacct-{date}.txt", cluster="onprem")
PODS = source("pods", "kubernetes", "k8s/pods-{date}.json", cluster="gke-ml")
GOOD = [sacct_line("10", f"{D1}T01:00:00"), sacct_line("11", f"{D1}T02:00:00")]


def _sacct(lines: list[str], **options: Any) -> Any:
    def build(folder: Path) -> Setup:
        sacct_file(folder, lines)
        pods_file(folder, [pod("a"), pod("b")])
        src = {**SLURM, "options": {**SLURM["options"], **options}}
        return Setup({"sources": [src, PODS]}, "slurm", DAYS)

    return build


def _sacct_bytes(data: bytes) -> Any:
    def build(folder: Path) -> Setup:
        write(folder / "sacct" / f"sacct-{D1}.txt", data)
        return Setup({"sources": [SLURM]}, "slurm", DAYS)

    return build


def _slurm_sample(name: str, cut_last: bool = False) -> Any:
    """A real sacct export (shared/samples/slurm) as the day's file; `cut_last`: its last
    line cut in half, as a copy interrupted mid-write leaves it."""

    def build(folder: Path) -> Setup:
        text = (samples_dir() / "slurm" / name).read_text()
        if cut_last:
            lines = text.rstrip("\n").split("\n")
            lines[-1] = lines[-1][: len(lines[-1]) // 2]
            text = "\n".join(lines) + "\n"
        write(folder / "sacct" / f"sacct-{D1}.txt", text)
        return Setup({"sources": [SLURM]}, "slurm", DAYS)

    return build


def _events(lines: list[str]) -> Any:
    def build(folder: Path) -> Setup:
        sacct_file(folder, GOOD)
        header = "NodeName|TimeStart|TimeEnd|State|Reason"
        write(folder / "sacct" / "events.txt", "\n".join([header, *lines]) + "\n")
        src = {**SLURM, "options": {**SLURM["options"], "events": "sacct/events.txt"}}
        return Setup({"sources": [src]}, "slurm", DAYS)

    return build


def _partitions_start_2019(folder: Path) -> Setup:
    day = date(2019, 3, 1)
    sacct_file(
        folder,
        [sacct_line("5", "2019-03-01T01:00:00", end="2019-03-01T02:00:00", state="COMPLETED")],
        day=day,
    )
    return Setup({"partitions_start": "2019-01-01", "sources": [SLURM]}, "slurm", (day,))


def _check_partitions_start(folder: Path) -> str | None:
    from fleetledger.config import load_config
    from fleetledger.pipeline import PipelineError, _validate_range

    try:
        _validate_range(date(2019, 3, 1), date(2019, 3, 1), load_config(folder / "fleetledger.yml"))
    except PipelineError as err:
        return f"a 2019 run is refused: {err}"
    return None


def _pods(days: dict[date, list[dict[str, Any]]]) -> Any:
    def build(folder: Path) -> Setup:
        for day, items in days.items():
            pods_file(folder, items, day)
        return Setup({"sources": [PODS]}, "pods", tuple(days))

    return build


def _pods_text(text: str) -> Any:
    def build(folder: Path) -> Setup:
        write(folder / "k8s" / f"pods-{D1}.json", text)
        return Setup({"sources": [PODS]}, "pods", DAYS)

    return build


def workload(name: str, uid: str | None = "default", kind: str = "Workload") -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml", "creationTimestamp": f"{D1}T00:00:00Z"}
    if uid is not None:
        meta["uid"] = f"wl-{name}" if uid == "default" else uid
    template = {
        "spec": {"containers": [{"name": "m", "resources": {"limits": {"nvidia.com/gpu": "8"}}}]}
    }
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": kind,
        "metadata": meta,
        "spec": {
            "queueName": "ml",
            "podSets": [{"name": "main", "count": 1, "template": template}],
        },
        "status": {},
    }


def _kueue(text: str) -> Any:
    def build(folder: Path) -> Setup:
        write(folder / "kueue" / f"workloads-{D1}.json", text)
        src = source(
            "kueue",
            "kueue",
            "kueue/workloads-{date}.json",
            cluster="gke-ml",
            snapshot_at=f"{D1}T12:00:00Z",
        )
        return Setup({"sources": [src]}, "kueue", DAYS)

    return build


HF_MARKER = (
    "2026-11-02 09:30:05,123 - INFO - transformers.trainer - Saving model checkpoint to /ckpt/c-500"
)


def _logs(files: dict[str, list[str]], location: str = "logs/**/*.out", **options: Any) -> Any:
    def build(folder: Path) -> Setup:
        for name, lines in files.items():
            write(folder / "logs" / name, "\n".join(lines) + "\n")
        opts = {"scheduler": "slurm", "cluster": "onprem", **options}
        return Setup({"sources": [source("logs", "run_logs", location, **opts)]}, "logs", DAYS)

    return build


CASES = [
    # --- handled on main
    Case(
        "slurm",
        "short-line",
        _sacct([*GOOD, "12|12|c|broken"]),
        Expect(
            "quarantine",
            landed=2,
            quarantined=1,
            reason=r"expected 14 fields, found 4",
            others={"pods": 2},
        ),
    ),
    Case(
        "slurm",
        "sample-last-line-cut",
        _slurm_sample("xdmod-accounting-logs.log", cut_last=True),
        Expect("quarantine", landed=3, quarantined=1, reason=r"expected 26 fields, found \d+"),
    ),
    Case(
        "slurm",
        "sample-unknown-job-state",
        _slurm_sample("xdmod-unknown-job-state.log"),
        Expect("quarantine", landed=0, quarantined=2, reason=r"(?i)state"),
    ),
    Case(
        "slurm",
        "scontrol-output-is-no-sacct",
        _slurm_sample("hb-jobinfo-scontrol-show-nodes.txt"),
        Expect(
            "error", (r"sacct-2026-11-02\.txt", r"line 1: expected 26 fields, found 1"), landed=0
        ),
    ),
    Case(
        "slurm",
        "sample-utf8-multibyte-lands",
        _slurm_sample("xdmod-utf8-multibyte-chars.log"),
        Expect("landed", landed=1, quarantined=0),
    ),
    Case(
        "slurm",
        "service-running-200-days-lands",
        _sacct([sacct_line("13", "2026-04-16T00:00:00"), *GOOD]),
        Expect("landed", landed=3, quarantined=0),
    ),
    # issue 11 finding 7, merged: an impossible time is quarantined naming the field and value
    Case(
        "slurm",
        "hour-25",
        _sacct([*GOOD, sacct_line("14", f"{D1}T25:61:00")]),
        Expect(
            "quarantine", landed=2, quarantined=1, reason=r"(?i)start.*25:61|25:61.*start|submit"
        ),
    ),
    Case(
        "slurm",
        "31-november",
        _sacct([*GOOD, sacct_line("15", "2026-11-31T01:00:00")]),
        Expect("quarantine", landed=2, quarantined=1, reason=r"2026-11-31"),
    ),
    Case(
        "slurm",
        "events-impossible-time",
        _events(
            [
                "gpu-a01|2026-11-02T25:00:00|2026-11-02T03:00:00|DOWN|xid 79",
                "gpu-a02|2026-11-02T01:00:00|2026-11-02T02:00:00|DOWN|bad psu",
            ]
        ),
        Expect(
            "quarantine",
            landed=1,
            quarantined=1,
            reason=r"25:00",
            table="slurm_node_events",
            quarantine_of="slurm.events",
        ),
    ),
    Case(
        "slurm",
        "partitions-start-2019-backfill",
        _partitions_start_2019,
        Expect("landed", landed=1, quarantined=0, check=_check_partitions_start),
    ),
    Case(
        "kubernetes",
        "bad-json",
        _pods_text('{"kind": "List",\n "items": [oops]}'),
        Expect("error", (rf"pods-{D1}\.json, line 2", r"not valid JSON"), landed=0),
    ),
    Case(
        "kubernetes",
        "not-a-pod-dump",
        _pods_text("[1, 2, 3]"),
        Expect("error", (rf"pods-{D1}\.json", r"not a `kubectl get pods -o json` dump")),
    ),
    Case(
        "kubernetes",
        "two-good-snapshots",
        _pods({D1: [pod("a"), pod("b")], D2: [pod("a")]}),
        Expect("landed", landed=3, quarantined=0),
    ),
    Case(
        "kueue",
        "bad-json",
        _kueue('{"items": ['),
        Expect("error", (rf"workloads-{D1}\.json, line 1", r"not valid JSON"), landed=0),
    ),
    Case(
        "kueue",
        "not-a-workload-dump",
        _kueue("[1]"),
        Expect("error", (rf"workloads-{D1}\.json", r"not a `kubectl get workloads -o json` dump")),
    ),
    Case(
        "kueue",
        "configmap-item",
        _kueue(json.dumps({"items": [workload("a"), workload("cm", kind="ConfigMap")]})),
        Expect(
            "quarantine", landed=1, quarantined=1, reason=r"item is a 'ConfigMap', not a Workload"
        ),
    ),
    Case(
        "kueue",
        "workload-without-uid",
        _kueue(json.dumps({"items": [workload("a"), workload("b", uid=None)]})),
        Expect("quarantine", landed=1, quarantined=1, reason=r"(?i)uid"),
    ),
    Case(
        "run_logs",
        "marker-without-time",
        _logs({"slurm-88001.out": [HF_MARKER, "Saving model checkpoint to /ckpt/c-1000"]}),
        Expect("quarantine", landed=1, quarantined=1, reason=r"checkpoint marker without a time"),
    ),
    Case(
        "run_logs",
        "file-matching-no-job",
        _logs({"slurm-88001.out": [HF_MARKER], "notes/train.out": [HF_MARKER]}),
        Expect("quarantine", landed=1, quarantined=1, reason=r"matches no job"),
    ),
    Case(
        "run_logs",
        "date-placeholder-refused",
        _logs({"slurm-88001.out": [HF_MARKER]}, location="logs/{date}/*.out"),
        Expect("error", (r"source logs", r"read whole")),
    ),
    Case(
        "run_logs",
        "unknown-scheduler",
        _logs({"slurm-88001.out": [HF_MARKER]}, scheduler="pbs"),
        Expect("error", (r"source logs", r"option scheduler")),
    ),
    Case(
        "run_logs",
        "invalid-marker-regex",
        _logs({"slurm-88001.out": [HF_MARKER]}, marker="save("),
        Expect("error", (r"source logs", r"option marker: invalid regex")),
    ),
    # --- issue 11 findings, pending their fixes
    Case(
        "slurm",
        "end-in-2099",
        _sacct(
            [
                *GOOD,
                sacct_line("16", f"{D1}T03:00:00", end="2099-01-01T00:00:00", state="COMPLETED"),
            ]
        ),
        Expect(
            "quarantine", landed=2, quarantined=1, reason=r"(?i)end.*(future|after|snapshot|now)"
        ),
    ),
    Case(
        "slurm",
        "end-before-start",
        _sacct(
            [*GOOD, sacct_line("17", f"{D1}T03:00:00", end=f"{D1}T02:00:00", state="COMPLETED")]
        ),
        Expect(
            "quarantine",
            landed=2,
            quarantined=1,
            reason=r"(?i)end.*before.*start|start.*after.*end",
        ),
    ),
    Case(
        "kubernetes",
        "pod-without-status",
        # D1 intact (a, b); D2: a intact, b without status -> 2 + 1 land, 1 quarantined
        _pods({D1: [pod("a"), pod("b")], D2: [pod("a"), pod("b", status=None)]}),
        Expect("quarantine", landed=3, quarantined=1, reason=r"(?i)status"),
    ),
    Case(
        "slurm",
        "non-utf8-bytes",
        _sacct_bytes(
            ("\n".join([SACCT_HEADER, *GOOD]) + "\n").encode()
            + sacct_line("18", f"{D1}T04:00:00", name="tr\xe4in").encode("latin-1")
            + b"\n"
        ),
        Expect("flagged", landed=2, quarantined=1, reason=r"(?i)utf|encod|decod|byte"),
    ),
    Case(
        "slurm",
        "steps-without-allocation",
        _sacct(
            [
                *GOOD,
                "19.batch|19.batch|c|||||2026-11-02T01:00:00|Unknown|01:00:00|RUNNING|cpu=8|gpu-a01|batch",
            ]
        ),
        Expect("finding", landed=2, finding=(r"(?i)step|allocation", "")),
    ),
]
