"""Ground truth of the fleet-health and operations marts, from the generator's own fleet.

Computed from what the generator decided (fleet.runs, fleet.outages, fleet.stragglers, the
exporters' scrape times) and from `Truth`'s per-second GPU states, never from the pipeline:

- `health_by_day_host`: per node and day, downtime (per hour, the most `down` seconds of any of
  the node's GPUs, as docs/metrics.md defines it), XIDs by code (one per outage, one XID 63
  per row remap and one per GPU fault (XID 48), on the day of its sample), the straggler GPUs
  / GPU-seconds, and the health signals (`health_signals`): throttle GPU-seconds per reason,
  ECC errors, remapped rows and row-remap failure, None where the node's exporter does not
  report the field;
- `health_scenarios`: the health events as the marts must show them (which GPU, day, numbers);
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

from fleetledger.generator import model as M
from fleetledger.generator.model import DAY, HOUR, Fleet, Node, iso
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


def _coverage_by_day(times: np.ndarray, stale_after: int, days: list[int]) -> np.ndarray:
    """Seconds of each sample's coverage [t, min(next t, t + stale_after)) in each day
    (samples x days): a sample's coverage past midnight counts in the next day."""
    nxt = np.append(times[1:], np.iinfo(np.int64).max)
    end = np.minimum(nxt, times + stale_after)
    a = np.array(days, dtype=np.int64)
    return np.clip(np.minimum(end[:, None], a + DAY) - np.maximum(times[:, None], a), 0, None)


def _throttle_masks(fleet: Fleet, node: Node, gpu: int, times: np.ndarray) -> np.ndarray:
    """The throttling bits the generator decided for each sample of a GPU (idle 0x1 left out:
    it is not throttling)."""
    mask = np.zeros(times.size, dtype=np.int64)
    for th in fleet.throttles:
        if th.host == node.host and gpu in th.gpu_indices:
            mask[(times >= th.start) & (times < th.end)] |= th.reasons
    return mask


def _first_sample_at(times: np.ndarray, at: int) -> int | None:
    """Index of the first sample at or after `at`, None when none."""
    i = int(np.searchsorted(times, at, side="left"))
    return i if i < times.size else None


def health_signals(fleet: Fleet, node: Node, stale_after: int) -> list[dict[str, Any]]:
    """Per day of the window, the node's throttle GPU-seconds by reason, ECC errors, remapped
    rows and row-remap failure, from the generator's events and the node's scrape times; None
    for what the node's exporter does not report.

    - throttle: each sample covers [t, min(next t, t + stale_after)), split at midnight; a
      reason's seconds are the coverage of the samples taken while an episode with that bit
      was on (`THROTTLING_REASONS`); `throttle` any of them, `thermal` 0x20 | 0x40, `power`
      0x4 | 0x80;
    - ECC: an error shows in the first sample at or after it, on that sample's day, unless it
      is the GPU's first sample (the counter's starting value) or the driver reloaded (the
      node's reboot after an outage) or the GPU was reset (after a fault) between the error and
      that sample (the counter restarted: a drop to 0 adds nothing);
    - remapped rows: each remap's increments on its sample's day, and each GPU fault's
      uncorrectable rows on its XID sample's day; failure: true from a failed remap's sample on.
    """
    days = [fleet.t0 + d * DAY for d in range(fleet.days)]
    times = scrape_times(fleet, node)
    fields = node.health_fields
    reasons = {name: np.zeros(len(days)) for name in M.THROTTLING_REASONS}
    groups = {
        "throttle": sum(M.THROTTLING_REASONS.values()),
        "thermal_throttle": M.SW_THERMAL | M.HW_THERMAL,
        "power_throttle": M.SW_POWER_CAP | M.HW_POWER_BRAKE,
    }
    grouped = {name: np.zeros(len(days)) for name in groups}
    if M.THROTTLE in fields and times.size:
        cover = _coverage_by_day(times, stale_after, days)  # samples x days
        for gpu in range(node.gpus):
            mask = _throttle_masks(fleet, node, gpu, times)
            for name, bit in M.THROTTLING_REASONS.items():
                reasons[name] += cover[(mask & bit) != 0].sum(axis=0)
            for name, bits in groups.items():
                grouped[name] += cover[(mask & bits) != 0].sum(axis=0)
    ecc = {k: np.zeros(len(days), dtype=np.int64) for k in ("sbe", "dbe")}
    reloads = [o.start for o in fleet.outages if o.host == node.host]
    resets = {
        g: [f.reset_at for f in fleet.gpu_faults if f.host == node.host and f.gpu_index == g]
        for g in range(node.gpus)
    }
    for e in fleet.ecc_errors:
        i = _first_sample_at(times, e.at) if e.host == node.host else None
        if i is not None and any(e.at <= r < times[i] for r in resets[e.gpu_index]):
            continue
        if i is None or i == 0 or any(e.at <= r < times[i] for r in reloads):
            continue
        ecc[e.kind][(int(times[i]) - fleet.t0) // DAY] += e.count
    remapped = {k: np.zeros(len(days), dtype=np.int64) for k in ("correctable", "uncorrectable")}
    failed_from: int | None = None
    for r in fleet.row_remaps:
        if r.host != node.host:
            continue
        d = (r.at - fleet.t0) // DAY
        remapped["correctable"][d] += r.correctable
        remapped["uncorrectable"][d] += r.uncorrectable
        if r.failure:
            failed_from = r.at if failed_from is None else min(failed_from, r.at)
    for fault in fleet.gpu_faults:
        if fault.host == node.host:
            remapped["uncorrectable"][(fault.at - fleet.t0) // DAY] += fault.uncorrectable_rows
    out = []
    for d, a in enumerate(days):
        row: dict[str, Any] = {}
        throttled = M.THROTTLE in fields
        for name in groups:
            row[f"{name}_gpu_seconds"] = float(grouped[name][d]) if throttled else None
        for name in M.THROTTLING_REASONS:
            row[f"throttle_{name}_gpu_seconds"] = float(reasons[name][d]) if throttled else None
        row["ecc_sbe_errors"] = int(ecc["sbe"][d]) if M.ECC_SBE in fields else None
        row["ecc_dbe_errors"] = int(ecc["dbe"][d]) if M.ECC_DBE in fields else None
        remap = M.ROW_REMAP in fields
        row["correctable_remapped_rows"] = int(remapped["correctable"][d]) if remap else None
        row["uncorrectable_remapped_rows"] = int(remapped["uncorrectable"][d]) if remap else None
        row["row_remap_failure"] = (
            (failed_from is not None and failed_from < a + DAY) if remap else None
        )
        out.append(row)
    return out


def health_scenarios(fleet: Fleet, stale_after: int) -> dict[str, Any]:
    """The health events as the marts must show them: the straggler's thermal throttling, the
    power-cap and HW-slowdown episodes, the row remap (XID 63), the ECC counter reset and the
    GPU faults (the double-bit ECC error: XID 48 until the GPU's reset)."""
    out: dict[str, Any] = {"throttles": [], "row_remaps": [], "ecc_resets": [], "gpu_faults": []}
    days = [fleet.t0 + d * DAY for d in range(fleet.days)]
    for th in fleet.throttles:
        node = fleet.node(th.host)
        times = scrape_times(fleet, node)
        cover = _coverage_by_day(times, stale_after, days)
        inside = (times >= th.start) & (times < th.end)
        out["throttles"].append(
            {
                "host": th.host,
                "gpu_indices": list(th.gpu_indices),
                "reasons": th.reasons,
                "start": iso(th.start),
                "end": iso(th.end),
                # per GPU and day: the coverage of the samples taken in the episode
                "gpu_seconds_by_day": {
                    day_str(a): float(cover[inside, d].sum()) for d, a in enumerate(days)
                },
            }
        )
    for r in fleet.row_remaps:
        out["row_remaps"].append(
            {
                "host": r.host,
                "gpu_index": r.gpu_index,
                "gpu_uuid": fleet.node(r.host).gpu_uuid(r.gpu_index),
                "at": iso(r.at),
                "day": day_str(r.at),
                "xid": M.XID_ROW_REMAP,
                "correctable": r.correctable,
            }
        )
    for o in fleet.outages:
        node = fleet.node(o.host)
        if M.ECC_SBE not in node.health_fields:
            continue
        sbe = [e for e in fleet.ecc_errors if e.host == o.host and e.kind == "sbe"]
        for gpu in sorted({e.gpu_index for e in sbe}):
            errs = [e for e in sbe if e.gpu_index == gpu]
            out["ecc_resets"].append(
                {
                    "host": o.host,
                    "gpu_index": gpu,
                    "reboot_day": day_str(o.end),
                    "reload_at": iso(o.start),
                    "first_sample_after": iso(o.end),
                    # the counter the exporter shows: before the outage, and at its first sample
                    "counter_before": sum(e.count for e in errs if e.at <= o.start),
                    "counter_after": sum(e.count for e in errs if o.start < e.at <= o.end),
                    "errors_on_reboot_day": sum(
                        e.count for e in errs if e.at > fleet.t0 and day_str(e.at) == day_str(o.end)
                    ),
                }
            )
    for fault in fleet.gpu_faults:
        times = scrape_times(fleet, fleet.node(fault.host))
        # the XID sample covers until the next sample (fatal: no stale limit), and so on until
        # the first sample after the reset, which reports normally: down = [at, back)
        back = int(times[np.searchsorted(times, fault.reset_at, side="right")])
        hours = range((fault.at - fleet.t0) // HOUR, (back - 1 - fleet.t0) // HOUR + 1)
        errs = [
            e
            for e in fleet.ecc_errors
            if (e.host, e.gpu_index) == (fault.host, fault.gpu_index) and e.at < fault.reset_at
        ]
        out["gpu_faults"].append(
            {
                "host": fault.host,
                "gpu_index": fault.gpu_index,
                "gpu_uuid": fleet.node(fault.host).gpu_uuid(fault.gpu_index),
                "xid": fault.xid,
                "day": day_str(fault.at),
                "at": iso(fault.at),
                "reset_at": iso(fault.reset_at),
                "first_sample_after_reset": iso(back),
                "down_seconds": back - fault.at,
                "down_seconds_by_hour": {
                    iso(fleet.t0 + h * HOUR): _overlap(
                        fault.at, back, fleet.t0 + h * HOUR, fleet.t0 + (h + 1) * HOUR
                    )
                    for h in hours
                },
                "samples_with_xid": int(((times >= fault.at) & (times < fault.reset_at)).sum()),
                "ecc_dbe_errors": sum(e.count for e in errs if e.kind == "dbe"),
                "uncorrectable_remapped_rows": fault.uncorrectable_rows,
                # the volatile counters the GPU shows just before the reset (0 after it); no
                # reload between the window's start and the fault on this GPU
                "ecc_sbe_counter_before_reset": sum(e.count for e in errs if e.kind == "sbe"),
                "ecc_dbe_counter_before_reset": sum(e.count for e in errs if e.kind == "dbe"),
            }
        )
    return out


def health_truth(fleet: Fleet, truth: Truth, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The `health_by_day_host`, `health_scenarios`, `stragglers`, `ops_daily` and
    `team_gpu_hours_daily` keys of ground_truth.json. `truth` must have seen every GPU
    (add_gpu); `runs` is Truth.finish()'s run list (for failure_class)."""
    days = [fleet.t0 + d * DAY for d in range(fleet.days)]
    episodes = straggler_episodes(fleet, truth.stale)

    # ------------------------------------------------------------------ health per node-day
    by_host: dict[str, list[np.ndarray]] = defaultdict(list)
    for uuid, per in truth.gpu_hours.items():
        by_host[truth.gpu_meta[uuid][0]].append(per["down"])
    health = []
    for node in fleet.nodes:
        down = np.vstack(by_host[node.host])  # gpus x hours
        # a node with a GPU down cannot run whole-node jobs: per hour, its most-down GPU
        node_down = down.max(axis=0)
        signals = health_signals(fleet, node, truth.stale)
        for d, a in enumerate(days):
            hours = slice(d * 24, (d + 1) * 24)
            b = a + DAY
            xids: dict[int, int] = defaultdict(int)
            for o in fleet.outages:
                if o.host == node.host and a <= o.start < b:
                    xids[o.xid] += 1
            for r in fleet.row_remaps:
                if r.host == node.host and a <= r.at < b:
                    xids[M.XID_ROW_REMAP] += 1
            for fault in fleet.gpu_faults:
                if fault.host == node.host and a <= fault.at < b:
                    xids[fault.xid] += 1
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
                    **signals[d],
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
        "health_scenarios": health_scenarios(fleet, truth.stale),
        "stragglers": episodes,
        "ops_daily": ops,
        "team_gpu_hours_daily": [
            {"day": d, "team": t, "allocated_gpu_hours": h}
            for (d, t), h in sorted(team_hours.items())
        ],
    }
