"""The fleet's incidents: what goes wrong, and when. No random draws: each incident sits at a fixed
offset in the window or follows from the runs laid out before it, so no run changes with them.

- The straggler (`straggler`): GPU 5 of the second node of the two-node AWS training run computes
  slower from 3 h after the run's start, for 6 h (or to the run's end).
- A scrape gap (`scrape_gap`): the last AWS node's exporter does not answer for 23 min 41 s
  from 09:03:17 on day 2, while runs hold its GPUs.
- The XID 79 outage (`bus_outage`): GPU 3 of the third on-prem node (the first, with fewer
  than three) falls off the bus at the node's first scrape after 10:15 on day 2; the node is
  back 5 h 20 min later, after a reboot. Its two-node training run ends NODE_FAIL at the XID.
- The health events (`health_events`): throttling, ECC errors, a row remap and a double-bit ECC
  error on a GPU no run holds (`dbe_fault`).
"""

from __future__ import annotations

from collections.abc import Callable

from fleetledger.generator.model import (
    DAY,
    HOUR,
    HW_POWER_BRAKE,
    HW_SLOWDOWN,
    HW_THERMAL,
    SW_POWER_CAP,
    SW_THERMAL,
    EccErrors,
    GpuFault,
    Node,
    Outage,
    RowRemap,
    Run,
    ScrapeGap,
    Straggler,
    Throttle,
)
from fleetledger.generator.nodes import scrape_time_after

#: the GPU of the XID 79 outage, and when (after the window's start) and for how long
BUS_OUTAGE_GPU = 3
BUS_OUTAGE_AFTER = DAY + 10 * HOUR + 15 * 60
BUS_OUTAGE_FOR = 5 * HOUR + 20 * 60


def straggler(train: Run) -> Straggler:
    """GPU 5 of the training run's second node computes slower from 3 h after the run's start
    for 6 h, or to the run's end (`health_events` throttles it thermally meanwhile)."""
    assert train.start is not None and train.end is not None
    start = train.start + 3 * HOUR
    return Straggler(train.nodes[1], 5, train.run_id, start, min(start + 6 * HOUR, train.end))


def scrape_gap(t0: int, host: str) -> ScrapeGap:
    """The exporter of `host` does not answer for 23 min 41 s from 09:03:17 on day 2."""
    start = t0 + DAY + 9 * HOUR + 3 * 60 + 17
    return ScrapeGap(host, start, start + 23 * 60 + 41)


def bus_outage(onprem: list[Node], *, t0: int, scrape_interval: int) -> Outage:
    """GPU `BUS_OUTAGE_GPU` of the third on-prem node (the first, with fewer than three) falls
    off the bus (XID 79) at the node's first scrape `BUS_OUTAGE_AFTER` into the window; the node
    is back, rebooted, at its first scrape `BUS_OUTAGE_FOR` later."""
    node = onprem[2] if len(onprem) > 2 else onprem[0]
    down = scrape_time_after(node, t0 + BUS_OUTAGE_AFTER, t0=t0, scrape_interval=scrape_interval)
    back = scrape_time_after(node, down + BUS_OUTAGE_FOR, t0=t0, scrape_interval=scrape_interval)
    return Outage(node.host, BUS_OUTAGE_GPU, 79, down, back)


#: the double-bit ECC error's GPU, and how long its XID 48 stays before the operator's reset
DBE_GPU = 1
DBE_RESET_AFTER = 37 * 60 - 23  # the first sample after the reset is 37 min after the XID's
DBE_MARGIN = 10 * 60  # no run holds the GPU this long before the XID and after the reset


def _held(runs: list[Run], t1: int, host: str, gpu: int, a: int, b: int) -> bool:
    """Does a run hold the GPU at any time in [a, b)?"""
    return any(
        r.start is not None
        and r.start < b
        and (r.end if r.end is not None else t1) > a
        and gpu in r.gpu_indices.get(host, [])
        for r in runs
    )


def dbe_fault(
    *,
    t0: int,
    t1: int,
    hosts: list[str],
    runs: list[Run],
    outages: list[Outage],
    scrape_after: Callable[[str, int], int],
) -> GpuFault | None:
    """A double-bit ECC error (XID 48) on GPU `DBE_GPU` of the first of `hosts` with a window on
    the second day where no run holds that GPU, and the node is not out, from `DBE_MARGIN`
    before the XID sample to `DBE_MARGIN` after the first sample past the reset. Candidate
    starts: the day's start and each end of a run or an outage on the host that day, in time
    order; the XID is at the first scrape `DBE_MARGIN` after the candidate. None when no such
    window exists."""
    a, b = t0 + DAY, min(t0 + 2 * DAY, t1)
    for host in hosts:
        out = [(o.start, o.end) for o in outages if o.host == host]
        ends = {
            r.end
            for r in runs
            if r.end is not None and a <= r.end < b and DBE_GPU in r.gpu_indices.get(host, [])
        } | {e for _, e in out if a <= e < b}
        for c in sorted({a} | ends):
            at = scrape_after(host, c + DBE_MARGIN)
            reset_at = at + DBE_RESET_AFTER
            back = scrape_after(host, reset_at + 1)
            if back + DBE_MARGIN > b:
                break
            if _held(runs, t1, host, DBE_GPU, c, back + DBE_MARGIN):
                continue
            if not any(s < back + DBE_MARGIN and e > c for s, e in out):
                return GpuFault(host, DBE_GPU, 48, at, reset_at)
    return None


def health_events(
    *,
    t0: int,
    t1: int,
    aws: list[str],
    onprem: list[str],
    runs: list[Run],
    outage: Outage,
    straggler: Straggler,
    train: Run,
    scrape_after: Callable[[str, int], int],
) -> tuple[list[Throttle], list[EccErrors], list[RowRemap], list[GpuFault]]:
    """Throttling episodes, ECC errors, a row remap and a double-bit ECC error, at fixed offsets
    in the window (the DBE error at the first free window of a GPU on day 2: `dbe_fault`).

    - the straggler GPU runs hot: SW + HW thermal slowdown for its whole window;
    - a SW power cap (a 600 W board limit) on 4 GPUs of the two-node training run for ~3 h;
    - an HW slowdown with the power brake asserted on one AWS GPU across the first midnight;
    - single-bit ECC errors on a GPU of the node that falls off the bus: 2 before the window,
      some before the outage, the counter restarts at the reboot, one error right after it
      (the first sample back shows 1) and more later; one more error on another on-prem node;
    - a correctable row remap (XID 63) on another on-prem node on the second day;
    - a double-bit ECC error on GPU 1 of an on-prem node, the last one with a free window on
      day 2 (the XID-79 node only when no other has one), where no run holds it (`dbe_fault`): 2
      single-bit errors 4 min before it, then the DBE counter +1, XID 48 and an uncorrectable
      remapped row; the operator resets the GPU 37 min later, clearing the XID and both
      volatile ECC counters of that GPU.
    """
    assert train.start is not None
    train_start = train.start
    throttles = [
        Throttle(
            straggler.host,
            (straggler.gpu_index,),
            straggler.start,
            straggler.end,
            SW_THERMAL | HW_THERMAL,
        ),
        Throttle(
            aws[0],
            (0, 1, 2, 3),
            train_start + 13 * HOUR + 7 * 60 + 19,
            train_start + 16 * HOUR + 18 * 60 + 22,
            SW_POWER_CAP,
            power_cap_w=600.0,
            sm_clock_mhz=1755,
        ),
        Throttle(
            aws[1],
            (2,),
            t0 + DAY - 7 * 60 - 13,
            t0 + DAY + 9 * 60 + 40,
            HW_SLOWDOWN | HW_POWER_BRAKE,
        ),
    ]
    xhost, gpu = outage.host, 6
    other = next(h for h in onprem if h != outage.host)
    ecc = [
        EccErrors(xhost, gpu, t0 - 3 * HOUR, 2),  # before the window: in the first sample
        EccErrors(xhost, gpu, t0 + 7 * HOUR + 3 * 60 + 11, 1),
        EccErrors(xhost, gpu, outage.start - 2 * HOUR - 40 * 60 - 5, 3),
        EccErrors(xhost, gpu, outage.end - 41, 1),  # after the reboot, before its first sample
        EccErrors(xhost, gpu, outage.end + 2 * HOUR + 11 * 60 + 7, 2),
        EccErrors(xhost, gpu, t0 + 2 * DAY + 8 * HOUR + 30, 4),
        EccErrors(other, 5, t0 + DAY + 21 * HOUR + 58 * 60 + 2, 1),
    ]
    remaps = [RowRemap(other, 2, scrape_after(other, t0 + DAY + 19 * HOUR + 42 * 60))]
    faults: list[GpuFault] = []
    dbe = dbe_fault(
        t0=t0,
        t1=t1,
        # the XID-79 node last: its reboot is the other reload of the volatile counters
        hosts=[h for h in reversed(onprem) if h != outage.host] + [outage.host],
        runs=runs,
        outages=[outage],
        scrape_after=scrape_after,
    )
    if dbe is not None:
        faults.append(dbe)
        ecc += [
            EccErrors(dbe.host, dbe.gpu_index, dbe.at - 4 * 60 - 13, 2),  # the precursor
            EccErrors(dbe.host, dbe.gpu_index, dbe.at, 1, "dbe"),
        ]
    return (
        [t for t in throttles if t.start < t1],
        [e for e in ecc if e.at < t1],
        [r for r in remaps if r.at < t1],
        faults,
    )
