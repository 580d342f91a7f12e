"""Ground truth of the fleet-health and operations marts, from the generator's own fleet.

Computed from what the generator decided (fleet.runs, fleet.outages, fleet.stragglers, the
exporters' scrape times) and from `Truth`'s per-second GPU states, never from the pipeline:

- `health_by_day_host`: per node and day, downtime (per hour, the seconds all the node's GPUs are
  `down`: the least of their down seconds, as docs/metrics.md defines it), XIDs by code (one per
  outage, on the day it starts) and the straggler GPUs / GPU-seconds;
- `stragglers`: each straggler episode as the pipeline must see it: from the straggling GPU's
  first sample inside the straggler's window to the end of its last sample's coverage;
- `ops_daily`: per day, runs ended / completed / failed (infra, user), queue wait p50 / p95 of runs
  started (linear interpolation), pending runs and GPUs at the end of the day, node outages ended
  and their MTTR;
- `team_gpu_hours_daily`: the scheduler's allocated GPU-hours per team and day.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import numpy as np

from fleetledger.generator.fleet import DAY, HOUR, Fleet, iso
from fleetledger.generator.telemetry import scrape_times
from fleetledger.generator.truth import Truth, day_str

COMPLETED_STATES = ("COMPLETED", "Succeeded")


def _overlap(a: int, b: int, c: int, d: int) -> int:
    return max(0, min(b, d) - max(a, c))


def straggler_episodes(fleet: Fleet, stale_after: int) -> list[dict[str, Any]]:
    """Each straggler window as the straggling GPU's samples show it (split at scrape gaps)."""
    out = []
    for s in fleet.stragglers:
        node = fleet.node(s.host)
        times = scrape_times(fleet, node)
        inside = times[(times >= s.start) & (times < s.end)]
        if inside.size == 0:
            continue
        after = times[times >= s.end]
        nxt = np.append(inside[1:], after[0] if after.size else fleet.t1)
        cover_end = np.minimum(nxt, inside + stale_after)
        # a new episode where the previous sample's coverage ends before the next sample
        breaks = np.nonzero(cover_end[:-1] < inside[1:])[0]
        starts = np.concatenate(([0], breaks + 1))
        ends = np.concatenate((breaks, [inside.size - 1]))
        for a, b in zip(starts, ends, strict=True):
            t_from, t_to = int(inside[a]), int(cover_end[b])
            out.append(
                {
                    "run_id": s.run_id,
                    "host": s.host,
                    "gpu_index": s.gpu_index,
                    "gpu_uuid": node.gpu_uuid(s.gpu_index),
                    "started_at": iso(t_from),
                    "ended_at": iso(t_to),
                    "started_epoch": t_from,
                    "ended_epoch": t_to,
                    "seconds": t_to - t_from,
                }
            )
    return out


def health_truth(fleet: Fleet, truth: Truth, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The `health_by_day_host`, `stragglers`, `ops_daily` and `team_gpu_hours_daily` keys of
    ground_truth.json. `truth` must have seen every GPU (add_gpu); `runs` is Truth.finish()'s
    run list (for failure_class)."""
    days = [fleet.t0 + d * DAY for d in range(fleet.days)]
    episodes = straggler_episodes(fleet, truth.stale)

    # ------------------------------------------------------------------ health per node-day
    by_host: dict[str, list[np.ndarray]] = defaultdict(list)
    for uuid, per in truth.gpu_hours.items():
        by_host[truth.gpu_meta[uuid][0]].append(per["down"])
    health = []
    for node in fleet.nodes:
        down = np.vstack(by_host[node.host])  # gpus x hours
        node_down = down.min(axis=0)
        for d, a in enumerate(days):
            hours = slice(d * 24, (d + 1) * 24)
            b = a + DAY
            xids: dict[int, int] = defaultdict(int)
            for o in fleet.outages:
                if o.host == node.host and a <= o.start < b:
                    xids[o.xid] += 1
            mine = [e for e in episodes if e["host"] == node.host]
            straggling = {
                e["gpu_uuid"]
                for e in mine
                if _overlap(e["started_epoch"], e["ended_epoch"], a, b) > 0
            }
            downtime = float(node_down[hours].sum())
            health.append(
                {
                    "day": day_str(a),
                    "host": node.host,
                    "accounted_seconds": DAY,
                    "downtime_seconds": downtime,
                    "uptime_seconds": DAY - downtime,
                    "gpu_down_seconds": float(down[:, hours].sum()),
                    "xid_count": sum(xids.values()),
                    "xid_counts": {str(k): v for k, v in sorted(xids.items())},
                    "stragglers": len(straggling),
                    "straggler_gpu_seconds": sum(
                        _overlap(e["started_epoch"], e["ended_epoch"], a, b) for e in mine
                    ),
                }
            )

    # ------------------------------------------------------------------ operations per day
    failure = {r["run_id"]: r["failure_class"] for r in runs}
    ops = []
    for a in days:
        b = a + DAY
        ended = [r for r in fleet.runs if r.end is not None and a <= r.end < b]
        started = [r for r in fleet.runs if r.start is not None and a <= r.start < b]
        waits = np.array([r.start - r.submitted for r in started], dtype=float)  # type: ignore[operator]
        pending = [
            r
            for r in fleet.runs
            if r.submitted < b
            and (r.start is None or r.start >= b)
            and (r.end is None or r.end >= b)
        ]
        outages = [o for o in fleet.outages if a <= o.end < b and o.end <= fleet.t1]
        completed = sum(r.state in COMPLETED_STATES for r in ended)
        ops.append(
            {
                "day": day_str(a),
                "runs_ended": len(ended),
                "runs_completed": completed,
                "completion_rate": completed / len(ended) if ended else None,
                "runs_failed_infra": sum(failure[r.run_id] == "infra" for r in ended),
                "runs_failed_user": sum(failure[r.run_id] == "user" for r in ended),
                "runs_started": len(started),
                "queue_wait_p50_seconds": float(np.percentile(waits, 50)) if waits.size else None,
                "queue_wait_p95_seconds": float(np.percentile(waits, 95)) if waits.size else None,
                "runs_pending_at_day_end": len(pending),
                # a pending job asks for its GPUs per node on at least one node
                "pending_gpus_at_day_end": sum(
                    r.gpus_per_node * max(len(r.nodes), 1) for r in pending
                ),
                "outages_ended": len(outages),
                "mttr_seconds": (
                    float(np.mean([o.end - o.start for o in outages])) if outages else None
                ),
            }
        )

    # ------------------------------------------------------------------ GPU-hours per team
    team_hours: dict[tuple[str, str], float] = defaultdict(float)
    for r in fleet.runs:
        if r.start is None:
            continue
        end = r.end if r.end is not None else fleet.t1
        for a in days:
            sec = _overlap(r.start, end, a, a + DAY)
            if sec:
                team_hours[(day_str(a), r.team)] += r.gpus * sec / HOUR
    return {
        "health_by_day_host": health,
        "stragglers": episodes,
        "ops_daily": ops,
        "team_gpu_hours_daily": [
            {"day": d, "team": t, "allocated_gpu_hours": h}
            for (d, t), h in sorted(team_hours.items())
        ],
    }
