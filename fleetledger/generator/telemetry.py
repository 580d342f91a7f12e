"""Per-GPU DCGM sample series for the synthetic fleet (the values the exporter reports)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fleetledger.generator import model as M
from fleetledger.generator.model import DAY, HOUR, Fleet, Node, Run, mig_fraction, stable_hex

IDLE_W = 70.0
MAX_W = 700.0
# what dcgm-exporter reports for a field the device does not support (GPU_UTIL under MIG)
DCGM_BLANK = 9223372036854775794


@dataclass
class GpuSeries:
    """Samples of one physical GPU, in time order, as they appear in the exported files."""

    host: str
    gpu: int
    uuid: str
    times: np.ndarray  # int64 epoch seconds
    holder: np.ndarray  # int32 index into fleet.runs, -1 when no run holds the GPU
    util_pct: np.ndarray  # DCGM_FI_DEV_GPU_UTIL, integer percent
    util_ratio: np.ndarray  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, 4 decimals
    power_w: np.ndarray  # 3 decimals
    fb_used_mib: np.ndarray
    sm_clock_mhz: np.ndarray
    xid: np.ndarray
    has_prof: bool
    # a MIG instance (GPU_I_ID, GPU_I_PROFILE); None for the physical device
    mig_instance: str | None = None
    mig_profile: str | None = None
    # a second run holding a time-sliced GPU at the same sample, -1 when none
    holder2: np.ndarray | None = None
    # the physical device of a MIG GPU: GPU_UTIL is blank, no run holds it
    mig_device: bool = False
    # health fields, None where the node's exporter does not report them (Node.health_fields)
    throttle_reasons: np.ndarray | None = None  # DCGM_FI_DEV_CLOCK_THROTTLE_REASONS bitmask
    ecc_sbe_total: np.ndarray | None = None  # volatile counters: restart at a driver reload
    ecc_dbe_total: np.ndarray | None = None
    correctable_remapped_rows: np.ndarray | None = None  # persistent counters
    uncorrectable_remapped_rows: np.ndarray | None = None
    row_remap_failure: np.ndarray | None = None  # gauge 0 / 1

    @property
    def fraction(self) -> float:
        """Share of the physical GPU this series stands for."""
        return mig_fraction(self.mig_profile) if self.mig_profile else 1.0

    @property
    def util_signal(self) -> np.ndarray:
        """The utilisation the pipeline must use: PROF_GR_ENGINE_ACTIVE if exported, else %/100."""
        if self.mig_device:
            return np.full(self.times.size, np.nan)
        return self.util_ratio if self.has_prof else self.util_pct / 100.0


def scrape_times(fleet: Fleet, node: Node) -> np.ndarray:
    """Times the node's exporter answered: every interval, minus outages and scrape gaps."""
    t = np.arange(fleet.t0 + node.sample_offset, fleet.t1, fleet.scrape_interval, dtype=np.int64)
    keep = np.ones(t.shape, dtype=bool)
    for o in fleet.outages:
        if o.host == node.host:
            keep &= ~((t > o.start) & (t < o.end))  # the XID sample at o.start is reported
    for g in fleet.gaps:
        if g.host == node.host:
            keep &= ~((t >= g.start) & (t < g.end))
    return t[keep]


def gpu_series(
    fleet: Fleet,
    node: Node,
    gpu: int,
    times: np.ndarray,
    mig: tuple[str, str] | None = None,
    mig_device: bool = False,
) -> GpuSeries:
    seed_parts = (fleet.seed, node.host, gpu) + ((mig[0],) if mig else ())
    rng = np.random.default_rng(int(stable_hex(*seed_parts, n=8), 16))
    n = times.size
    holder = np.full(n, -1, dtype=np.int32)
    holder2 = np.full(n, -1, dtype=np.int32)
    util = np.zeros(n)
    memory: list[tuple[np.ndarray, Run]] = []  # the runs whose GPU memory is their own
    for i, run in enumerate(fleet.runs):
        if run.start is None or gpu not in run.gpu_indices.get(node.host, []):
            continue
        if mig_device or (run.mig_instance or None) != (mig[0] if mig else None):
            continue
        end = run.end if run.end is not None else fleet.t1
        m = (times >= run.start) & (times < end)
        if not m.any():
            continue
        second = m & (holder >= 0)
        holder2[second] = i
        holder[m & ~second] = i
        t = times[m]
        # a waste case (waste_runs.py) draws from a stream of its own: the GPU's draws for every
        # other run are as without it
        draw = _own_stream(fleet, run, "load") if run.own_stream else rng
        noise = draw.normal(0, 0.04, t.size)
        if run.util_profile == "idle":
            u = draw.uniform(0.0, 0.03, t.size)
            spikes = draw.random(t.size) < 0.01
            u[spikes] = draw.uniform(0.2, 0.5, spikes.sum())
        elif run.util_profile == "diurnal":
            hour = ((t % DAY) / HOUR - 6.0) / 24.0
            u = run.util_mean * (0.55 + 0.45 * np.sin(2 * np.pi * hour)) + noise
        else:
            u = run.util_mean + noise
        if run.load_test is not None:
            lt_from, lt_to, lt_util = run.load_test
            u = np.where((t >= lt_from) & (t < lt_to), lt_util + noise, u)
        if run.memory_mib is not None:
            memory.append((m, run))
        # the first few minutes of a run load data and sit below the idle threshold
        u = np.where(t < run.start + 240, draw.uniform(0.0, 0.04, t.size), u)
        if run.util_profile == "hang_then_fail":
            u = np.where(t >= end - 40 * 60, 0.0, u)
        util[m] = util[m] + u  # time-sliced runs add up
    for s in fleet.stragglers:
        if s.host == node.host and s.gpu_index == gpu:
            m = (times >= s.start) & (times < s.end)
            util[m] *= s.util_factor
    util = np.clip(util, 0.0, 1.0)
    util_ratio = np.round(util, 4)
    util_pct = np.round(util * 100).astype(np.int64)
    held = (holder >= 0) | (holder2 >= 0)
    power = np.round(IDLE_W + (MAX_W - IDLE_W) * util**0.9 + rng.normal(0, 3, n).clip(-9, 9), 3)
    fb = np.where(held, rng.integers(38_000, 78_000, n), 0).astype(np.int64)
    for m, run in memory:
        fb[m] = _own_stream(fleet, run, "memory").integers(*run.memory_mib, int(m.sum()))  # type: ignore[misc]
    sm = np.where(held & (util >= 0.05), 1980, 345).astype(np.int64)
    for s in fleet.stragglers:
        if s.host == node.host and s.gpu_index == gpu:
            m = (times >= s.start) & (times < s.end)
            sm[m] = s.sm_clock_mhz
    health = _health_fields(fleet, node, gpu, times, util) if mig is None else {}
    if "throttle_reasons" in health:
        for th in fleet.throttles:
            if th.host == node.host and gpu in th.gpu_indices:
                m = (times >= th.start) & (times < th.end)
                if th.power_cap_w is not None:
                    power[m] = np.minimum(power[m], th.power_cap_w)
                if th.sm_clock_mhz is not None:
                    sm[m] = np.minimum(sm[m], th.sm_clock_mhz)
    xid = np.zeros(n, dtype=np.int64)
    boot = _last_reload(fleet, node, times, gpu)
    for r in fleet.row_remaps:
        if r.host == node.host and r.gpu_index == gpu:
            xid[(times >= r.at) & (boot < r.at)] = M.XID_ROW_REMAP  # until the driver reloads
    for fault in fleet.gpu_faults:
        if fault.host == node.host and fault.gpu_index == gpu:
            # the last XID until the operator resets the GPU (no run holds it: nothing dies)
            xid[(times >= fault.at) & (times < fault.reset_at)] = fault.xid
    for o in fleet.outages:
        if o.host == node.host:
            at = times == o.start
            if o.gpu_index == gpu:
                xid[at] = o.xid
            util_ratio[at], util_pct[at], sm[at] = 0.0, 0, 0
            power[at] = IDLE_W
            holder[at] = -1  # the run died with the node
    return GpuSeries(
        host=node.host,
        gpu=gpu,
        uuid=node.gpu_uuid(gpu),
        times=times,
        holder=holder,
        util_pct=util_pct,
        util_ratio=util_ratio,
        power_w=power,
        fb_used_mib=fb,
        sm_clock_mhz=sm,
        xid=xid,
        has_prof=node.provider == "aws" or mig is not None,
        mig_instance=mig[0] if mig else None,
        mig_profile=mig[1] if mig else None,
        holder2=holder2,
        mig_device=mig_device,
        **health,
    )


def _own_stream(fleet: Fleet, run: Run, what: str) -> np.random.Generator:
    """A waste case run's own random stream (`Run.own_stream`)."""
    return np.random.default_rng(int(stable_hex(fleet.seed, run.run_id, what, n=8), 16))


def _last_reload(fleet: Fleet, node: Node, times: np.ndarray, gpu: int) -> np.ndarray:
    """Per sample, when the GPU's driver state last reloaded before it: the node's reboot after
    an outage (at the outage's start for what the exporter reports afterwards) or a reset of
    this GPU after a fault (at the reset); int64 min when never."""
    last = np.full(times.size, np.iinfo(np.int64).min, dtype=np.int64)
    reloads = [o.start for o in fleet.outages if o.host == node.host] + [
        f.reset_at for f in fleet.gpu_faults if f.host == node.host and f.gpu_index == gpu
    ]
    for at in sorted(reloads):
        last[times > at] = at
    return last


def _health_fields(
    fleet: Fleet, node: Node, gpu: int, times: np.ndarray, util: np.ndarray
) -> dict[str, np.ndarray]:
    """The health fields the node's exporter reports for a physical GPU (GpuSeries kwargs)."""
    out: dict[str, np.ndarray] = {}
    n = times.size
    if M.THROTTLE in node.health_fields:
        reasons = np.where(util < M.THROTTLE_IDLE_UTIL, M.THROTTLE_IDLE, 0).astype(np.int64)
        for th in fleet.throttles:
            if th.host == node.host and gpu in th.gpu_indices:
                reasons[(times >= th.start) & (times < th.end)] |= th.reasons
        out["throttle_reasons"] = reasons
    boot = _last_reload(fleet, node, times, gpu)
    for kind, group in (("sbe", M.ECC_SBE), ("dbe", M.ECC_DBE)):
        if group in node.health_fields:
            total = np.zeros(n, dtype=np.int64)
            for e in fleet.ecc_errors:
                if e.host == node.host and e.gpu_index == gpu and e.kind == kind:
                    # counted from the sample at or after the error, until the driver reloads
                    # or the GPU is reset
                    total += e.count * ((times >= e.at) & (boot < e.at))
            out[f"ecc_{kind}_total"] = total
    if M.ROW_REMAP in node.health_fields:
        corr = np.zeros(n, dtype=np.int64)
        uncorr = np.zeros(n, dtype=np.int64)
        failure = np.zeros(n, dtype=np.int64)
        for r in fleet.row_remaps:
            if r.host == node.host and r.gpu_index == gpu:
                after = times >= r.at
                corr += r.correctable * after
                uncorr += r.uncorrectable * after
                failure[after & r.failure] = 1
        for fault in fleet.gpu_faults:
            if fault.host == node.host and fault.gpu_index == gpu:
                uncorr += fault.uncorrectable_rows * (times >= fault.at)  # persistent
        out["correctable_remapped_rows"] = corr
        out["uncorrectable_remapped_rows"] = uncorr
        out["row_remap_failure"] = failure
    return out


def node_series(fleet: Fleet, node: Node) -> list[GpuSeries]:
    """Every series the node's exporter reports: one per GPU, plus one per MIG instance."""
    times = scrape_times(fleet, node)
    out: list[GpuSeries] = []
    for g in range(node.gpus):
        instances = node.mig.get(g, [])
        out.append(gpu_series(fleet, node, g, times, mig_device=bool(instances)))
        for inst in instances:
            out.append(gpu_series(fleet, node, g, times, mig=inst))
    return out
