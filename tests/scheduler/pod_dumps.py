"""Two daily `kubectl get pods -A -o json` dumps for the pod-snapshot tests (issue 11, finding
5): day 1 intact; day 2 with one item that lacks `status`, one whose status lacks `startTime`
and one new pod."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

D1, D2 = date(2026, 11, 28), date(2026, 11, 29)


def pod(
    name: str,
    gpus: int,
    started: str | None,
    *,
    finished: str | None = None,
    status: bool = True,
    start_time: bool = True,
) -> dict[str, Any]:
    item: dict[str, Any] = {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"u-{name}",
            "creationTimestamp": started,
            "labels": {"team": "ml"},
        },
        "spec": {
            "nodeName": "gpu-node-1",
            "containers": [{"name": "main", "resources": {"limits": {"nvidia.com/gpu": gpus}}}],
        },
    }
    if status:
        st: dict[str, Any] = {"phase": "Succeeded" if finished else "Running"}
        if start_time:
            st["startTime"] = started
        if finished:
            st["containerStatuses"] = [
                {
                    "name": "main",
                    "state": {
                        "terminated": {
                            "exitCode": 0,
                            "reason": "Completed",
                            "startedAt": started,
                            "finishedAt": finished,
                        }
                    },
                }
            ]
        item["status"] = st
    return item


SVC_START = "2026-11-27T00:00:00Z"  # a service running since before the first day
B_START = "2026-11-28T12:00:00Z"
DAY1 = [pod("svc", 8, SVC_START), pod("b", 1, B_START)]
DAY2 = [
    pod("svc", 8, SVC_START, status=False),
    pod("b", 1, B_START, start_time=False),
    pod("c", 2, "2026-11-29T06:00:00Z", finished="2026-11-29T18:00:00Z"),
]


def write_dumps(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for day, items in ((D1, DAY1), (D2, DAY2)):
        doc = {"apiVersion": "v1", "kind": "List", "items": items}
        (folder / f"pods-{day}.json").write_text(json.dumps(doc))
    return folder / "pods-{date}.json"
