"""Ground truth: what the pipeline must find, computed here independently of it.

The pipeline works on intervals in SQL; this module works second by second with numpy arrays,
applying DESIGN.md's rules ("From samples to seconds", "Cost allocation") to the generator's own
samples and schedule. Agreement of the two is the test.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

import numpy as np

from fleetledger.generator import model as M
from fleetledger.generator.log_files import iso_us
from fleetledger.generator.model import DAY, HOUR, Fleet, Run
from fleetledger.generator.telemetry import GpuSeries

STATES = ("busy", "allocated_idle", "unallocated", "down")


def day_str(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%d")


#: pod reasons that mean the infrastructure failed the pod (dbt var k8s_infra_failure_reasons)
K8S_INFRA_REASONS = ("Evicted", "NodeLost", "UnexpectedAdmissionError", "Preempting", "Shutdown")


def failure_class(run: Run, fatal_runs: set[str]) -> str | None:
    if run.state in ("NODE_FAIL", "BOOT_FAIL", "PREEMPTED") or run.run_id in fatal_runs:
        return "infra"
    if run.pod_reason in K8S_INFRA_REASONS and run.state != "Succeeded":
        return "infra"
    if run.state in ("FAILED", "OUT_OF_MEMORY", "TIMEOUT", "Failed") or run.exit_code != 0:
        return "user"
    return None


class Truth:
    def __init__(self, fleet: Fleet, idle_threshold: float, stale_after: int):
        self.fleet = fleet
        self.thr = idle_threshold
        self.stale = stale_after
        self.n_hours = fleet.days * 24
        # per GPU: per-hour seconds by state, unobserved, energy
        self.gpu_hours: dict[str, dict[str, np.ndarray]] = {}
        self.gpu_meta: dict[str, tuple[str, int]] = {}
        # per (run index, host, hour): held seconds by state
        self.run_secs: dict[tuple[int, str], np.ndarray] = {}
        # checkpoints (set_checkpoints): run index -> last checkpoint (epoch seconds, float), and
        # per (run index, host, hour): busy + allocated-idle seconds at or after it
        self.lost_from: dict[int, float] = {}
        self.last_checkpoint_us: dict[str, int] = {}
        self.run_lost: dict[tuple[int, str], np.ndarray] = {}

    def set_checkpoints(self, last_checkpoint_us: dict[str, int]) -> None:
        """Each run's last checkpoint (run_id → µs since the epoch, from its log); call before
        `add_gpu`, which then counts each run's paid seconds from its checkpoint on."""
        self.last_checkpoint_us = dict(last_checkpoint_us)
        self.lost_from = {
            i: last_checkpoint_us[r.run_id] / 1e6
            for i, r in enumerate(self.fleet.runs)
            if r.run_id in last_checkpoint_us
        }

    def coverage(self, s: GpuSeries) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per second of the window: covered by a sample of `s`, covered by a fatal-XID sample,
        and the index of the covering (last) sample."""
        f = self.fleet
        secs_n = f.days * DAY
        T = s.times - f.t0
        fatal = np.isin(s.xid, M.FATAL_XIDS)
        nxt = np.append(T[1:], secs_n)
        end = np.where(fatal, nxt, np.minimum(nxt, T + self.stale))
        sec = np.arange(secs_n, dtype=np.int64)
        idx = np.searchsorted(T, sec, side="right") - 1
        valid = idx >= 0
        idx_c = np.where(valid, idx, 0)
        covered = valid & (sec < end[idx_c])
        return covered, covered & fatal[idx_c], idx_c

    def node_event_seconds(self, host: str) -> np.ndarray:
        """Seconds of the window during which a scheduler node event marks `host` down (the
        generator's outages, exported as `sacctmgr show event` DOWN events of Slurm nodes)."""
        f = self.fleet
        secs_n = f.days * DAY
        mask = np.zeros(secs_n, dtype=bool)
        slurm_clusters = {r.cluster for r in f.runs if r.scheduler == "slurm"}
        if f.node(host).cluster not in slurm_clusters:
            return mask
        for o in f.outages:
            if o.host == host and o.start < f.t1:
                mask[max(o.start - f.t0, 0) : min(o.end - f.t0, secs_n)] = True
        return mask

    def add_node(self, host: str, series: list[tuple[GpuSeries, float]]) -> None:
        """Add every series of one node. An unheld second no sample of a series covers is
        `down` only with a failure signal (DESIGN.md): a node event marking the node down, or
        another series of the node covering it with a non-fatal sample (the GPU fell off the
        bus); otherwise `unallocated` and unobserved (the node was not observed)."""
        cov = [self.coverage(s) for s, _ in series]
        reporting = [c & ~fat for c, fat, _ in cov]
        count = np.sum(reporting, axis=0) if reporting else None
        events = self.node_event_seconds(host)
        for (s, fraction), (covered, is_fatal, idx_c), own in zip(
            series, cov, reporting, strict=True
        ):
            others = (count - own) > 0 if count is not None else np.zeros_like(covered)
            self.add_gpu(s, fraction, (covered, is_fatal, idx_c), events | others)

    def add_gpu(
        self,
        s: GpuSeries,
        fraction: float = 1.0,
        cov: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
        signal: np.ndarray | None = None,
    ) -> None:
        """Add one series: a whole GPU, a MIG instance (its slice fraction of the GPU) or the
        device series of a MIG GPU (the fraction no instance uses; never held). `signal`: the
        seconds the GPU has a failure signal (add_node); none when not given."""
        f = self.fleet
        secs_n = f.days * DAY
        covered, is_fatal, idx_c = cov if cov is not None else self.coverage(s)
        if signal is None:
            signal = np.zeros(secs_n, dtype=bool)
        sec = np.arange(secs_n, dtype=np.int64)
        util = s.util_signal[idx_c]
        # who holds the unit each second; time-sliced GPUs may have two holders at once
        h1 = np.full(secs_n, -1, dtype=np.int32)
        h2 = np.full(secs_n, -1, dtype=np.int32)
        holding: list[int] = []
        for i, run in enumerate(f.runs):
            if s.mig_device or run.start is None:
                continue
            if s.gpu not in run.gpu_indices.get(s.host, []):
                continue
            if (run.mig_instance or None) != s.mig_instance:
                continue
            a = max(run.start - f.t0, 0)
            b = min((run.end if run.end is not None else f.t1) - f.t0, secs_n)
            seg = slice(a, b)
            holding.append(i)
            second = h1[seg] >= 0
            h2[seg] = np.where(second, i, h2[seg])
            h1[seg] = np.where(second, h1[seg], i)
        held = (h1 >= 0) | (h2 >= 0)
        n_holders = (h1 >= 0).astype(np.int8) + (h2 >= 0).astype(np.int8)
        state = np.empty(secs_n, dtype=np.int8)
        # uncovered and not held: down with a failure signal, else unallocated (unobserved)
        state[:] = np.where(signal, 3, 2)
        busy_util = np.where(np.isnan(util), True, util >= self.thr)
        state[covered & held & busy_util] = 0
        state[covered & held & ~busy_util] = 1
        state[covered & ~held] = 2
        state[~covered & held] = 0
        state[is_fatal] = 3
        unobserved = (~covered & held & ~is_fatal) | (~covered & ~held & ~signal)
        hours = sec // HOUR
        per = self.gpu_hours.setdefault(
            s.uuid,
            {k: np.zeros(self.n_hours) for k in (*STATES, "unobserved", "energy_wh")},
        )
        for k, name in enumerate(STATES):
            per[name] += fraction * np.bincount(hours, weights=(state == k), minlength=self.n_hours)
        per["unobserved"] += fraction * np.bincount(
            hours, weights=unobserved, minlength=self.n_hours
        )
        if s.mig_instance is None:  # power is a device metric
            energy = np.where(covered, s.power_w[idx_c], 0.0)
            per["energy_wh"] += np.bincount(hours, weights=energy, minlength=self.n_hours) / 3600.0
            self.gpu_meta[s.uuid] = (s.host, s.gpu)
        else:
            energy = np.zeros(secs_n)
        # what each run held, by hour and state, split equally between concurrent holders
        share = np.where(n_holders > 0, 1.0 / np.maximum(n_holders, 1), 0.0) * fraction
        for holders in (h1, h2):
            m = holders >= 0
            if not m.any():
                continue
            # one bincount per state over (run, hour) keys, not one pass per run
            runs, local = np.unique(holders[m], return_inverse=True)
            key = local * self.n_hours + hours[m]
            size = runs.size * self.n_hours
            per_state = [
                np.bincount(key, weights=(state[m] == k) * share[m], minlength=size).reshape(
                    runs.size, self.n_hours
                )
                for k in range(4)
            ]
            # the GPU energy of the covered seconds it held (Wh), split like its seconds
            per_state.append(
                np.bincount(key, weights=energy[m] * share[m] / 3600.0, minlength=size).reshape(
                    runs.size, self.n_hours
                )
            )
            for j, i in enumerate(runs):
                arr = np.stack([ps[j] for ps in per_state], axis=1)
                rk = (int(i), s.host)
                self.run_secs[rk] = self.run_secs.get(rk, 0) + arr
        # work lost: each second's paid (busy + allocated-idle) share at or after the run's last
        # checkpoint; the second the checkpoint falls in counts for the part after it
        for i in holding:
            if i not in self.lost_from:
                continue
            run = f.runs[i]
            lf = self.lost_from[i] - f.t0
            a = max(int(np.floor(lf)), 0)
            b = min((run.end if run.end is not None else f.t1) - f.t0, secs_n)
            if a >= b:
                continue
            seg = slice(a, b)
            mine = (h1[seg] == i) | (h2[seg] == i)
            weight = np.clip(sec[seg] + 1 - lf, 0.0, 1.0)
            paid = mine & (state[seg] <= 1)
            lost = np.bincount(
                hours[seg], weights=paid * share[seg] * weight, minlength=self.n_hours
            )
            rk = (i, s.host)
            self.run_lost[rk] = self.run_lost.get(rk, 0) + lost

    # ---------------------------------------------------------------------------------------
    def finish(self, pue_by_site_day: dict[tuple[str, str], float]) -> dict:
        f = self.fleet
        hours_t = f.t0 + np.arange(self.n_hours) * HOUR
        days = [day_str(int(t)) for t in hours_t]
        node_cost: dict[str, np.ndarray] = {}
        node_gpu_energy: dict[str, np.ndarray] = defaultdict(lambda: np.zeros(self.n_hours))
        for uuid, per in self.gpu_hours.items():
            node_gpu_energy[self.gpu_meta[uuid][0]] += per["energy_wh"]
        for n in f.nodes:
            if n.provider == "aws":
                rate = M.P5_SAVINGS_PLAN_PER_HOUR if n.savings_plan else M.P5_ON_DEMAND_PER_HOUR
                c = np.full(self.n_hours, rate)
            elif n.provider == "gcp":
                c = np.full(
                    self.n_hours,
                    M.A3_GPU_PER_HOUR
                    + M.A3_CORE_PER_HOUR
                    + M.A3_RAM_PER_HOUR
                    + M.A3_CUD_CREDIT_PER_HOUR,
                )
            else:
                capex = M.DGX_CAPEX / (M.DGX_AMORTISATION_MONTHS * 730.0)
                kwh = (node_gpu_energy[n.host] + M.HOST_OVERHEAD_W) / 1000.0
                pue = np.array([pue_by_site_day[(n.site, d)] for d in days])
                c = capex + kwh * M.POWER_PRICE_PER_KWH * pue
            node_cost[n.host] = c
        gpu_rate = {n.host: node_cost[n.host] / (n.gpus * HOUR) for n in f.nodes}

        # GPU-days and idle by cause
        gpu_days = []
        idle: dict[tuple[str, str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
        for uuid, per in self.gpu_hours.items():
            host, gi = self.gpu_meta[uuid]
            rate = gpu_rate[host]
            for d in range(f.days):
                sl = slice(d * 24, (d + 1) * 24)
                row = {"gpu_uuid": uuid, "host": host, "gpu_index": gi, "day": days[d * 24]}
                for k in STATES:
                    row[f"{k}_seconds"] = float(per[k][sl].sum())
                row["unobserved_seconds"] = float(per["unobserved"][sl].sum())
                row["energy_wh"] = float(per["energy_wh"][sl].sum())
                row["cost"] = float((rate[sl] * 3600).sum())
                gpu_days.append(row)
                for k in STATES[1:]:
                    cell = idle[(days[d * 24], host, k)]
                    cell[0] += float(per[k][sl].sum()) / 3600.0
                    cell[1] += float((per[k][sl] * rate[sl]).sum())

        # runs
        fatal_runs: set[str] = set()
        for o in f.outages:
            for r in f.runs:
                if (
                    o.host in r.nodes
                    and r.start is not None
                    and r.start <= o.start < (r.end if r.end is not None else f.t1) + 1
                ):
                    fatal_runs.add(r.run_id)
        for fault in f.gpu_faults:  # a fatal XID on a GPU a run holds (the generator's is free)
            for r in f.runs:
                if (
                    r.start is not None
                    and fault.gpu_index in r.gpu_indices.get(fault.host, [])
                    and r.start <= fault.at < (r.end if r.end is not None else f.t1)
                ):
                    fatal_runs.add(r.run_id)
        runs = []
        for i, r in enumerate(f.runs):
            busy = aidle = down = energy_wh = 0.0
            cost = aidle_cost = since_checkpoint_cost = 0.0
            for h in r.nodes:
                arr = self.run_secs.get((i, h))
                if arr is None:
                    continue
                rate = gpu_rate[h]
                busy += float(arr[:, 0].sum())
                aidle += float(arr[:, 1].sum())
                down += float(arr[:, 3].sum())
                energy_wh += float(arr[:, 4].sum())
                cost += float(((arr[:, 0] + arr[:, 1]) * rate).sum())
                aidle_cost += float((arr[:, 1] * rate).sum())
                lost_secs = self.run_lost.get((i, h))
                if lost_secs is not None:
                    since_checkpoint_cost += float((lost_secs * rate).sum())
            if r.start is None:
                alloc = 0.0
            else:
                alloc = float(
                    r.gpu_equivalents * ((r.end if r.end is not None else f.t1) - r.start)
                )
            fc = failure_class(r, fatal_runs)
            ckpt_us = self.last_checkpoint_us.get(r.run_id)
            if fc is None or r.start is None:
                lost_cost, lost_seconds = 0.0, 0.0
            elif ckpt_us is None:
                lost_cost = cost
                lost_seconds = float((r.end if r.end is not None else f.t1) - r.start)
            else:
                lost_cost = since_checkpoint_cost
                lost_seconds = ((r.end if r.end is not None else f.t1) * 1_000_000 - ckpt_us) / 1e6
            runs.append(
                {
                    "run_id": r.run_id,
                    "scheduler": r.scheduler,
                    "cluster": r.cluster,
                    "job_id": r.job_id,
                    "attempt": r.attempt,
                    "team": r.team,
                    "kind": r.kind,
                    "state": r.state,
                    "failure_class": fc,
                    "gpus": r.gpus,
                    "hosts": r.nodes,
                    "gpu_seconds": alloc,
                    "busy_seconds": busy,
                    "allocated_idle_seconds": aidle,
                    "down_seconds": down,
                    "energy_wh": energy_wh,
                    "cost": cost,
                    "allocated_idle_cost": aidle_cost,
                    "last_checkpoint_at": None if ckpt_us is None else iso_us(ckpt_us),
                    "lost_work_seconds": lost_seconds,
                    "lost_work_cost": lost_cost,
                }
            )

        node_cost_day_provider: dict[tuple[str, str], float] = defaultdict(float)
        for n in f.nodes:
            for h in range(self.n_hours):
                node_cost_day_provider[(days[h], n.provider)] += float(node_cost[n.host][h])
        return {
            "gpu_days": gpu_days,
            "idle_by_day_host_cause": [
                {"day": d, "host": h, "cause": c, "gpu_hours": v[0], "cost": v[1]}
                for (d, h, c), v in sorted(idle.items())
            ],
            "runs": runs,
            "gpu_node_cost_by_day_provider": [
                {"day": d, "provider": p, "cost": c}
                for (d, p), c in sorted(node_cost_day_provider.items())
            ],
            "node_cost_by_host": {h: float(c.sum()) for h, c in node_cost.items()},
        }
