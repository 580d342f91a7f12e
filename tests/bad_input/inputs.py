"""Small hand-written inputs the corpus cases corrupt: every count a case expects is visible
here (two GPUs per host, one line per sample, one pod per item)."""

from __future__ import annotations

import gzip
import json
import os
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[2]
# the shared real sample files, looked up as tests/conftest.py does
SAMPLE_DIRS = (
    os.environ.get("FLEETLEDGER_SAMPLES"),
    _REPO / "shared" / "samples",
    _REPO.parent / "shared" / "samples",
)

D1, D2 = date(2026, 11, 2), date(2026, 11, 3)


class SamplesMissing(FileNotFoundError):
    """The real sample exports are not there: the cases built from them are skipped."""


def samples_dir() -> Path:
    """shared/samples (the real exports); the corpus needs it like tests/conftest.py's
    `samples` fixture does."""
    for c in SAMPLE_DIRS:
        if c and Path(c).is_dir():
            return Path(c)
    raise SamplesMissing("shared/samples is not available (set FLEETLEDGER_SAMPLES)")


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def write_gz(path: Path, text: str | bytes) -> Path:
    data = text.encode() if isinstance(text, str) else text
    return write(path, gzip.compress(data))


def source(name: str, kind: str, location: str, **options: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"name": name, "kind": kind, "location": location}
    if options:
        entry["options"] = options
    return entry


# ------------------------------------------------------------------------------------ DCGM


def ms(d: date, hour: int, minute: int = 0) -> int:
    return int(datetime(d.year, d.month, d.day, hour, minute, tzinfo=UTC).timestamp() * 1000)


def dcgm_line(
    host: str,
    gpu: int,
    value: str,
    stamp: int | None,
    metric: str = "DCGM_FI_DEV_GPU_UTIL",
    **lb: str,
) -> str:
    labels = f'gpu="{gpu}",UUID="GPU-{host}-{gpu}",Hostname="{host}"'
    labels += "".join(f',{k}="{v}"' for k, v in lb.items())
    tail = f" {stamp}" if stamp is not None else ""
    return f"{metric}{{{labels}}} {value}{tail}"


def prom(host: str, day: date, hours: int = 2) -> str:
    """`hours` scrapes (00:00, 01:00, ...) of GPU_UTIL 50 for GPUs 0 and 1: 2 x hours samples."""
    out = ["# TYPE DCGM_FI_DEV_GPU_UTIL gauge"]
    out += [dcgm_line(host, g, "50", ms(day, h)) for h in range(hours) for g in range(2)]
    return "\n".join(out) + "\n"


def dcgm_source(**options: Any) -> dict[str, Any]:
    return source("dcgm", "dcgm", "dcgm/{date}/*.prom.gz", **options)


def dcgm_day(folder: Path, extra: list[str], host: str = "n1", day: date = D1) -> Path:
    """n1's scrape file for `day`: `prom` (4 samples) plus the `extra` lines."""
    return write_gz(
        folder / "dcgm" / day.isoformat() / f"{host}.prom.gz",
        prom(host, day) + "\n".join(extra) + "\n",
    )


# ------------------------------------------------------------------------------------ Slurm

SACCT_HEADER = (
    "JobID|JobIDRaw|Cluster|Partition|Account|User|Submit|Start|End|Elapsed|State|AllocTRES|"
    "NodeList|JobName"
)


def sacct_line(
    job: str,
    start: str,
    end: str = "Unknown",
    state: str = "RUNNING",
    gpus: int = 4,
    name: str = "train",
) -> str:
    return (
        f"{job}|{job}|c|gpu|ml|ann|{start}|{start}|{end}|01:00:00|{state}|"
        f"cpu=8,gres/gpu={gpus}|gpu-a01|{name}"
    )


def sacct_file(folder: Path, lines: list[str], day: date = D1) -> Path:
    return write(folder / "sacct" / f"sacct-{day}.txt", "\n".join([SACCT_HEADER, *lines]) + "\n")


# ------------------------------------------------------------------------------- Kubernetes


def pod(name: str, gpus: int = 1, status: Any = "default", namespace: str = "ml") -> dict[str, Any]:
    item: dict[str, Any] = {
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": f"uid-{name}",
            "creationTimestamp": "2026-11-01T00:00:00Z",
        },
        "spec": {
            "nodeName": "gke-1",
            "containers": [{"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}],
        },
    }
    if status == "default":
        item["status"] = {"phase": "Running", "startTime": "2026-11-01T00:00:00Z"}
    elif status is not None:
        item["status"] = status
    return item


def pods_file(folder: Path, items: list[dict[str, Any]], day: date = D1) -> Path:
    return write(folder / "k8s" / f"pods-{day}.json", json.dumps({"kind": "List", "items": items}))


# ------------------------------------------------------------------------------------ power

POWER_HEADER = "timestamp,site,meter,kind,kw"


def power_file(folder: Path, rows: list[str], day: date = D1) -> Path:
    return write(folder / "power" / f"power-{day}.csv", "\n".join([POWER_HEADER, *rows]) + "\n")


def power_rows(day: date = D1, n: int = 3) -> list[str]:
    """`n` facility readings of 100 kW at 00:00, 00:01, ..."""
    return [f"{day}T00:{m:02d}:00Z,dc1,main,facility,100" for m in range(n)]


def power_source(location: str = "power/power-{date}.csv", **options: Any) -> dict[str, Any]:
    return source("power", "power", location, **options)


# ------------------------------------------------------------------------------ GCP billing


def gcp_row(
    cost: float | str = 2.0, month: str = "202611", start: str = "2026-11-02T00:00:00Z"
) -> dict[str, Any]:
    return {
        "billing_account_id": "01A2B3-C4D5E6-F7A8B9",
        "service": {"id": "6F81-5844-456A", "description": "Compute Engine"},
        "sku": {"id": "0D9B-F2E4-AB12", "description": "Nvidia H100 80GB GPU running in Americas"},
        "usage_start_time": start,
        "usage_end_time": start.replace("T00:", "T01:"),
        "project": {"id": "fleet-ml-prod"},
        "cost": cost,
        "currency": "USD",
        "usage": {"amount": 3600, "unit": "seconds"},
        "credits": [],
        "invoice": {"month": month},
    }


def gcp_file(
    folder: Path, rows: list[dict[str, Any]] | list[str], name: str = "export-1.jsonl"
) -> Path:
    lines = [r if isinstance(r, str) else json.dumps(r) for r in rows]
    return write(folder / "gcp" / name, "\n".join(lines) + ("\n" if lines else ""))
