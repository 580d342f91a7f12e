"""Lay out a synthetic fleet from a seed: its nodes, runs and incidents (the data model is in
model.py). Times are integer seconds since the Unix epoch (UTC).
"""

from __future__ import annotations

from datetime import date

import numpy as np

from fleetledger.generator.gpu_calendar import Calendar
from fleetledger.generator.incidents import bus_outage, health_events, scrape_gap, straggler
from fleetledger.generator.model import (
    DAY,
    HOUR,
    Fleet,
    Node,
    Outage,
    Run,
    ScrapeGap,
    Straggler,
    epoch,
    stable_hex,
    stable_uuid,
)
from fleetledger.generator.nodes import build_nodes, mig_node, scrape_time_after


def _util_for_kind(rng: np.random.Generator, kind: str) -> float:
    return {
        "training": float(rng.uniform(0.78, 0.95)),
        "batch": float(rng.uniform(0.45, 0.85)),
        "inference": float(rng.uniform(0.35, 0.6)),
        "interactive": float(rng.uniform(0.0, 0.03)),
    }[kind]


def build_fleet(
    *,
    start: date,
    days: int,
    seed: int,
    scrape_interval: int = 60,
    aws_nodes: int = 4,
    gcp_nodes: int = 2,
    onprem_nodes: int = 4,
    mig: bool = False,
) -> Fleet:
    if days < 2:
        raise ValueError("a fleet needs at least 2 days")
    if aws_nodes < 2 or gcp_nodes < 1 or onprem_nodes < 2:
        raise ValueError("a fleet needs at least 2 AWS, 1 GCP and 2 on-prem nodes")
    rng = np.random.default_rng(seed)
    nodes = build_nodes(aws_nodes, gcp_nodes, onprem_nodes)
    t0 = epoch(start)
    t1 = t0 + days * DAY
    cal = Calendar(nodes)

    def scrape_after(node: Node, t: int) -> int:
        return scrape_time_after(node, t, t0=t0, scrape_interval=scrape_interval)

    runs: list[Run] = []
    outages: list[Outage] = []
    gaps: list[ScrapeGap] = []
    stragglers: list[Straggler] = []
    by_provider = {p: [n for n in nodes if n.provider == p] for p in ("aws", "gcp", "onprem")}

    slurm_ids = {"aws-hpc": 41000, "onprem": 88000}

    def next_job_id(cluster: str, n: int = 1) -> int:
        jid = slurm_ids[cluster]
        slurm_ids[cluster] += n
        return jid

    def slurm_run(
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
        if job_id is None:
            raw = str(next_job_id(cluster))
            job_id, job_id_raw = raw, raw
        wait = int(rng.integers(30, 2400)) if wait is None else wait
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
            util_mean=_util_for_kind(rng, kind) if util is None else util,
            util_profile=profile,
            array_job_id=array[0] if array else None,
            array_task=array[1] if array else None,
        )
        runs.append(r)
        return r

    def hold(run: Run) -> None:
        end = run.end if run.end is not None else t1
        if run.start is None:
            return
        for h in run.nodes:
            cal.reserve(h, run.gpu_indices[h], run.start, min(end, t1))

    # ---------------- AWS Slurm cluster (hpc_job labels) -------------------------------------
    aws = [n.host for n in by_provider["aws"]]
    full = list(range(8))
    # 1. multi-node training run on two nodes, with a thermally throttled straggler GPU
    train_start = t0 + 2 * HOUR + 13 * 60 + 27
    train_end = min(train_start + 20 * HOUR + 41 * 60, t1 - HOUR)
    mn = slurm_run(
        "aws-hpc",
        "llm-training",
        "llm",
        "mkumar",
        "train",
        "training",
        "llama-8b-pretrain",
        aws[:2],
        8,
        {aws[0]: full, aws[1]: full},
        train_start,
        train_end,
        "COMPLETED",
        util=0.91,
    )
    hold(mn)
    stragglers.append(straggler(mn))
    # 2. a preempted and requeued run: attempt 1 is preempted, attempt 2 runs to completion
    pq_raw = str(next_job_id("aws-hpc"))
    pq1_dur = 3 * HOUR + 17 * 60 + 41
    pq1_start, pq1_host, pq1_idx = cal.place(aws, 4, t0 + 1 * HOUR + 5 * 60 + 9, pq1_dur)
    pq1_end = pq1_start + pq1_dur
    pq1 = slurm_run(
        "aws-hpc",
        "research",
        "rl",
        "lchen",
        "batch",
        "batch",
        "ppo-sweep-base",
        [pq1_host],
        4,
        {pq1_host: pq1_idx},
        pq1_start,
        pq1_end,
        "PREEMPTED",
        job_id=pq_raw,
        job_id_raw=pq_raw,
        attempt=1,
        exit_code=0,
    )
    hold(pq1)
    pq2_dur = 5 * HOUR + 2 * 60 + 11
    pq2_start, pq2_host, pq2_idx = cal.place(aws, 4, pq1_end + 47 * 60 + 3, pq2_dur)
    pq2 = slurm_run(
        "aws-hpc",
        "research",
        "rl",
        "lchen",
        "batch",
        "batch",
        "ppo-sweep-base",
        [pq2_host],
        4,
        {pq2_host: pq2_idx},
        pq2_start,
        pq2_start + pq2_dur,
        "COMPLETED",
        job_id=pq_raw,
        job_id_raw=pq_raw,
        attempt=2,
        wait=pq2_start - pq1_end,
    )
    hold(pq2)
    # 3. a failed run that hangs (0 % utilisation) for its last 40 minutes
    fr_dur = 2 * HOUR + 13 * 60 + 5
    fr_earliest = t0 + DAY + 4 * HOUR + 31 * 60 + 50
    fr_start, fr_host, fr_idx = cal.place(aws, 4, fr_earliest, fr_dur)
    fr = slurm_run(
        "aws-hpc",
        "research",
        "research",
        "pnovak",
        "batch",
        "batch",
        "eval-harness",
        [fr_host],
        4,
        {fr_host: fr_idx},
        fr_start,
        fr_start + fr_dur,
        "FAILED",
        exit_code=1,
        profile="hang_then_fail",
    )
    hold(fr)
    # 4. an array job: 6 tasks of 2 GPUs placed first-fit on the AWS nodes
    arr_id = next_job_id("aws-hpc", 6)
    arr_submit = t0 + 5 * HOUR + 20 * 60
    for task in range(6):
        dur = int(rng.integers(90, 240)) * 60 + int(rng.integers(0, 60))
        st, host, idx = cal.place(aws, 2, arr_submit + 60 * task, dur)
        r = slurm_run(
            "aws-hpc",
            "data",
            "data",
            "okafor",
            "batch",
            "batch",
            "tokenize-shard",
            [host],
            2,
            {host: idx},
            st,
            st + dur,
            "COMPLETED",
            job_id=f"{arr_id}_{task}",
            job_id_raw=str(arr_id + task),
            wait=st - arr_submit,
            array=(str(arr_id), task),
        )
        hold(r)
    # 5. a scrape gap on an AWS node while runs hold its GPUs (unobserved seconds)
    gaps.append(scrape_gap(t0, aws[-1]))

    # ---------------- On-prem Slurm cluster (whole nodes, no hpc_job labels) -------------------
    onp = [n.host for n in by_provider["onprem"]]
    # 6. a two-node training run on dgx-03/04 that dies when dgx-03 falls off the bus (XID 79)
    xnode = by_provider["onprem"][2] if len(onp) > 2 else by_provider["onprem"][0]
    partner = onp[3] if len(onp) > 3 else onp[1]
    x_run_start = t0 + DAY + 1 * HOUR + 44 * 60 + 2
    outage = bus_outage(xnode, t0=t0, scrape_interval=scrape_interval)
    xr = slurm_run(
        "onprem",
        "llm-training",
        "llm",
        "mkumar",
        "train",
        "training",
        "moe-ablation-3",
        [xnode.host, partner],
        8,
        {xnode.host: full, partner: full},
        x_run_start,
        outage.start,
        "NODE_FAIL",
        exit_code=0,
        util=0.88,
    )
    hold(xr)
    outages.append(outage)
    cal.reserve(xnode.host, full, outage.start, outage.end)  # down: no run placed on it

    # ---------------- GCP Kubernetes (pod/namespace labels) -------------------------------------
    gke = [n.host for n in by_provider["gcp"]]

    def pod(
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
    ) -> Run:
        """A pod holding GPUs `idx` of `host` (or MIG instance `mig` of GPU idx[0]); `reserve`
        keeps other placements off its GPUs (MIG and time-sliced GPUs are shared on purpose)."""
        uid = stable_uuid(seed, "pod", name, start_t)
        wait = int(rng.integers(5, 300))
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
            util_mean=_util_for_kind(rng, kind) if util is None else util,
            util_profile=profile,
            pod_name=name,
            labels=labels or {},
            mig_instance=mig[0] if mig else None,
            mig_profile=mig[1] if mig else None,
        )
        runs.append(r)
        if reserve:
            hold(r)
        return r

    # 7. inference pods: a 4-GPU vLLM server per GKE node, up the whole window
    for i, host in enumerate(gke):
        pod(
            f"vllm-llama-70b-{stable_hex('vllm', i, n=10)}-{stable_hex('rs', i, n=5)}",
            "inference",
            "serving",
            "inference",
            host,
            [0, 1, 2, 3],
            t0 + 17 * 60 + 11 * i,
            None,
            "Running",
            profile="diurnal",
            labels={"app": "vllm", "team": "serving"},
        )
    # 8. an interactive notebook holding 4 GPUs idle over the weekend (Fri 17:00 -> Mon 09:00)
    wd = start.weekday()
    fri = t0 + ((4 - wd) % 7) * DAY
    nb_start = fri + 17 * HOUR + 2 * 60 + 31
    nb_end = fri + 3 * DAY + 9 * HOUR + 12 * 60 + 5
    if nb_start >= t1 - 2 * HOUR:
        nb_start = t0 + 17 * HOUR + 2 * 60 + 31
    nb = pod(
        "jupyter-alice",
        "research-notebooks",
        "research",
        "interactive",
        gke[-1],
        [4, 5, 6, 7],
        nb_start,
        nb_end if nb_end < t1 else None,
        "Succeeded" if nb_end < t1 else "Running",
        util=0.01,
        profile="idle",
        labels={"app": "jupyter", "user": "alice"},
    )
    _ = nb
    # 9. batch embedding pods on the first GKE node's free GPUs, one OOMKilled
    bt = t0 + 3 * HOUR
    k = 0
    while bt < t1 - 4 * HOUR and k < 8 * days:
        dur = int(rng.integers(70, 200)) * 60 + int(rng.integers(0, 60))
        st, host, idx = cal.place(gke[:1], 2, bt, dur)
        if st + dur >= t1:
            break
        oom = k == 2
        end_t = st + (dur // 3 if oom else dur)
        pod(
            f"embed-batch-{k:03d}",
            "data-eng",
            "data",
            "batch",
            host,
            idx,
            st,
            end_t,
            "Failed" if oom else "Succeeded",
            exit_code=137 if oom else 0,
            labels={"app": "embedder", "team": "data"},
        )
        bt = st + int(rng.integers(1, 4)) * HOUR
        k += 1

    # 10. an optional MIG node: GPUs 0-3 split into MIG instances held by pods, GPUs 4-5
    #     time-sliced (two pods may hold GPU 4 at once), GPUs 6-7 free
    if mig:
        mnode = mig_node(seed, len(nodes))
        nodes.append(mnode)
        cal.add(mnode)

        for g, insts in mnode.mig.items():
            for inst in insts:
                if g == 0 and inst[0] == "3":
                    continue  # an instance nobody uses
                a = t0 + int(rng.integers(1, 10)) * HOUR + int(rng.integers(0, 3600))
                b = a + int(rng.integers(6, 30)) * HOUR + int(rng.integers(0, 3600))
                end = b if b < t1 else None
                pod(
                    f"mig-infer-{g}-{inst[0]}",
                    "inference",
                    "serving",
                    "inference",
                    mnode.host,
                    [g],
                    a,
                    end,
                    "Running" if end is None else "Succeeded",
                    labels={"app": "mig-infer", "team": "serving"},
                    mig=inst,
                    reserve=False,
                )

        def shared_pod(name: str, g: int, a: int, b: int) -> Run:
            return pod(
                name,
                "data-eng",
                "data",
                "batch",
                mnode.host,
                [g],
                a,
                min(b, t1 - 1),
                "Succeeded",
                labels={"app": "etl", "team": "data"},
                reserve=False,
            )

        shared_pod("etl-shared-a", 4, t0 + 2 * HOUR + 111, t0 + 20 * HOUR + 2222)
        shared_pod("etl-shared-b", 4, t0 + 10 * HOUR + 333, t0 + 30 * HOUR + 444)
        shared_pod("etl-solo-c", 5, t0 + 5 * HOUR + 555, t0 + 9 * HOUR + 666)

    # ---------------- background Slurm load on both clusters ----------------------------------
    def background(cluster: str, hosts: list[str], whole_nodes: bool, per_day: int) -> None:
        teams = [
            ("research", "research", "pnovak"),
            ("research", "rl", "lchen"),
            ("data", "data", "okafor"),
            ("llm-training", "llm", "mkumar"),
        ]
        t = t0 + 30 * 60
        j = -1
        while t < t1:
            j += 1
            team, account, user = teams[int(rng.integers(0, len(teams)))]
            k = 8 if whole_nodes else int(rng.choice([1, 2, 4, 8]))
            dur = int(rng.integers(40, 420)) * 60 + int(rng.integers(0, 60))
            kind = "training" if k == 8 and dur > 3 * HOUR else "batch"
            st, host, idx = cal.place(hosts, k, t, dur)
            wait = st - t + int(rng.integers(0, 600))
            if st >= t1:
                # still pending when the window closes
                raw = str(next_job_id(cluster))
                runs.append(
                    Run(
                        scheduler="slurm",
                        cluster=cluster,
                        job_id=raw,
                        job_id_raw=raw,
                        attempt=1,
                        team=team,
                        user=user,
                        account=account,
                        queue="train" if kind == "training" else "batch",
                        kind=kind,
                        name=f"job-{j:04d}",
                        gpus_per_node=k,
                        nodes=[],
                        gpu_indices={},
                        submitted=t,
                        start=None,
                        end=None,
                        state="PENDING",
                    )
                )
                t += int(rng.exponential(DAY / per_day))
                continue
            end_t: int | None = st + dur
            state = "COMPLETED"
            exit_code = 0
            if end_t >= t1:
                end_t, state = None, "RUNNING"
            elif rng.random() < 0.08:
                state, exit_code = "FAILED", int(rng.choice([1, 2, 137]))
            r = slurm_run(
                cluster,
                team,
                account,
                user,
                "train" if kind == "training" else "batch",
                kind,
                f"job-{j:04d}",
                [host],
                k,
                {host: idx},
                st,
                end_t,
                state,
                exit_code=exit_code,
                wait=wait,
            )
            hold(r)
            t += int(rng.exponential(DAY / per_day))

    background("aws-hpc", aws, False, 32)
    background("onprem", onp, True, 11)

    # ---------------- health events (fixed times: no draws, the runs above do not change) -------
    throttles, ecc_errors, row_remaps, gpu_faults = health_events(
        t0=t0,
        t1=t1,
        aws=aws,
        onprem=onp,
        runs=runs,
        outage=outages[0],
        straggler=stragglers[0],
        train_start=train_start,
        scrape_time_after=lambda host, t: scrape_after(next(n for n in nodes if n.host == host), t),
    )

    runs.sort(key=lambda r: (r.scheduler, r.cluster, r.submitted, r.job_id, r.attempt))
    return Fleet(
        start_day=start,
        days=days,
        seed=seed,
        scrape_interval=scrape_interval,
        nodes=nodes,
        runs=runs,
        outages=outages,
        gaps=gaps,
        stragglers=stragglers,
        throttles=throttles,
        ecc_errors=ecc_errors,
        row_remaps=row_remaps,
        gpu_faults=gpu_faults,
    )
