"""The run book: every run of the fleet is recorded here, and every GPU it holds is reserved in
the calendar so that later runs are placed around it.

The random draws of the whole layout come from one seeded generator (`RunBook.rng`), in the
order `fleet.build_fleet` lays the runs out: a change in that order changes every file. A Slurm
run draws its queue wait (unless given) and then its utilisation (unless given); a pod draws
its wait (unless given) and then its utilisation (unless given).
"""

from __future__ import annotations

import numpy as np

from fleetledger.generator.gpu_calendar import Calendar
from fleetledger.generator.model import DAY, Run, stable_uuid

#: the first Slurm job id of each cluster
FIRST_JOB_ID = {"aws-hpc": 41000, "onprem": 88000}


def util_for_kind(rng: np.random.Generator, kind: str) -> float:
    """A run's mean utilisation by its kind. Draws all four kinds' (the dict is built whole)
    and keeps one: the seeded draws of every fleet depend on it."""
    return {
        "training": float(rng.uniform(0.78, 0.95)),
        "batch": float(rng.uniform(0.45, 0.85)),
        "inference": float(rng.uniform(0.35, 0.6)),
        "interactive": float(rng.uniform(0.0, 0.03)),
    }[kind]


class RunBook:
    """The runs laid out so far over the window [t0, t1), the calendar of busy GPUs and the
    seeded random draws."""

    def __init__(
        self, rng: np.random.Generator, calendar: Calendar, *, seed: int, t0: int, t1: int
    ) -> None:
        self.rng = rng
        self.calendar = calendar
        self.seed = seed
        self.t0 = t0
        self.t1 = t1
        self.runs: list[Run] = []
        self._next_ids = dict(FIRST_JOB_ID)

    @property
    def days(self) -> int:
        return (self.t1 - self.t0) // DAY

    def next_job_id(self, cluster: str, n: int = 1) -> int:
        """The cluster's next Slurm job id; `n` ids in a row (an array job's tasks)."""
        jid = self._next_ids[cluster]
        self._next_ids[cluster] += n
        return jid

    def place(
        self, hosts: list[str], k: int, earliest: int, dur: int
    ) -> tuple[int, str, list[int]]:
        """The earliest (start, host, GPU indices) from `earliest` on where `k` GPUs of one of
        `hosts` are free for `dur` seconds (`Calendar.place`)."""
        return self.calendar.place(hosts, k, earliest, dur)

    def slurm_run(
        self,
        cluster: str,
        team: str,
        account: str,
        user: str,
        partition: str,
        kind: str,
        name: str,
        hosts: list[str],
        gpus_per_node: int,
        indices: dict[str, list[int]],
        start_t: int,
        end_t: int | None,
        state: str,
        *,
        job_id: str | None = None,
        job_id_raw: str | None = None,
        attempt: int = 1,
        exit_code: int = 0,
        wait: int | None = None,
        util: float | None = None,
        profile: str = "steady",
        array: tuple[str, int] | None = None,
    ) -> Run:
        """Record a Slurm run (the caller `hold`s it); a job id of its own unless given."""
        if job_id is None:
            raw = str(self.next_job_id(cluster))
            job_id, job_id_raw = raw, raw
        wait = int(self.rng.integers(30, 2400)) if wait is None else wait
        r = Run(
            scheduler="slurm",
            cluster=cluster,
            job_id=job_id,
            job_id_raw=job_id_raw or job_id,
            attempt=attempt,
            team=team,
            user=user,
            account=account,
            queue=partition,
            kind=kind,
            name=name,
            gpus_per_node=gpus_per_node,
            nodes=hosts,
            gpu_indices=indices,
            submitted=start_t - wait,
            start=start_t,
            end=end_t,
            state=state,
            exit_code=exit_code,
            util_mean=util_for_kind(self.rng, kind) if util is None else util,
            util_profile=profile,
            array_job_id=array[0] if array else None,
            array_task=array[1] if array else None,
        )
        self.runs.append(r)
        return r

    def hold(self, run: Run) -> None:
        """Reserve the GPUs the run holds, from its start to its end (or the window's)."""
        end = run.end if run.end is not None else self.t1
        if run.start is None:
            return
        for h in run.nodes:
            self.calendar.reserve(h, run.gpu_indices[h], run.start, min(end, self.t1))

    def pod(
        self,
        name: str,
        namespace: str,
        team: str,
        kind: str,
        host: str,
        idx: list[int],
        start_t: int,
        end_t: int | None,
        state: str,
        *,
        exit_code: int = 0,
        util: float | None = None,
        profile: str = "steady",
        labels: dict[str, str] | None = None,
        mig: tuple[str, str] | None = None,
        reserve: bool = True,
        pod_reason: str | None = None,
        deleted: bool = False,
        wait: int | None = None,
    ) -> Run:
        """A pod holding GPUs `idx` of `host` (or MIG instance `mig` of GPU idx[0]); `reserve`
        keeps other placements off its GPUs (MIG and time-sliced GPUs are shared on purpose)."""
        uid = stable_uuid(self.seed, "pod", name, start_t)
        wait = int(self.rng.integers(5, 300)) if wait is None else wait
        r = Run(
            scheduler="kubernetes",
            cluster="gke-ml",
            job_id=uid,
            job_id_raw=uid,
            attempt=1,
            team=team,
            user=(labels or {}).get("user", "system:serviceaccount"),
            account=namespace,
            queue=namespace,
            kind=kind,
            name=name,
            gpus_per_node=0 if mig else len(idx),
            nodes=[host],
            gpu_indices={host: idx},
            submitted=start_t - wait,
            start=start_t,
            end=end_t,
            state=state,
            exit_code=exit_code,
            util_mean=util_for_kind(self.rng, kind) if util is None else util,
            util_profile=profile,
            pod_name=name,
            labels=labels or {},
            mig_instance=mig[0] if mig else None,
            mig_profile=mig[1] if mig else None,
            pod_reason=pod_reason,
            deleted=deleted,
        )
        self.runs.append(r)
        if reserve:
            self.hold(r)
        return r
