"""The Slurm clusters' runs: the named runs of the fleet's story on AWS and on-prem, and the
background load that fills both clusters around them.

AWS (`aws-hpc`, its DCGM exporter adds `hpc_job` labels), in the order they are laid out:

1. `llama-8b-pretrain`: a two-node training run on the first two AWS nodes from 02:13:27 on
   day 1 for 20 h 41 min (at most to 1 h before the window's end); the straggler GPU and the
   SW power cap are in it (incidents.py);
2. `ppo-sweep-base`: a 4-GPU run placed first-fit from 01:05:09 on day 1, preempted after
   3 h 17 min 41 s and requeued: attempt 2 starts 47 min 3 s later (or when 4 GPUs are free)
   and completes after 5 h 2 min 11 s;
3. `eval-harness`: a 4-GPU run placed from 04:31:50 on day 2, 2 h 13 min 5 s long, that hangs
   (0 % utilisation) for its last 40 min and fails;
4. `tokenize-shard`: an array job of 6 two-GPU tasks submitted at 05:20 on day 1, each
   placed first-fit.

On-prem (`onprem`, whole nodes, no `hpc_job` labels):

6. `moe-ablation-3`: a two-node training run (dgx-03 and dgx-04 in the default fleet) that
   ends NODE_FAIL when its first node falls off the bus (XID 79, incidents.py).

11. with `mig_gres=True`, `mig-eval-1g`: a job on the on-prem MIG node (nodes.onprem_mig_node)
    requesting `gres/gpu:1g.10gb=1`, on GPU 0's 1g.10gb instance from 06:00 on day 1 for
    9 h 30 min: it holds 1/7 of that GPU. Laid out after the background load, its wait and load
    given: it takes no random draw and moves no other run.

(5 is the scrape gap and 7-10 the GKE pods: incidents.py, gke_runs.py.)
"""

from __future__ import annotations

from fleetledger.generator.model import DAY, HOUR, Outage, Run
from fleetledger.generator.runs import RunBook


def aws_runs(book: RunBook, aws: list[str]) -> Run:
    """Lay out the AWS cluster's named runs 1-4 on `aws`; the two-node training run (1)."""
    t0, t1, rng = book.t0, book.t1, book.rng
    full = list(range(8))
    # 1. multi-node training run on two nodes, with a thermally throttled straggler GPU
    train_start = t0 + 2 * HOUR + 13 * 60 + 27
    train_end = min(train_start + 20 * HOUR + 41 * 60, t1 - HOUR)
    mn = book.slurm_run(
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
    book.hold(mn)
    # 2. a preempted and requeued run: attempt 1 is preempted, attempt 2 runs to completion
    pq_raw = str(book.next_job_id("aws-hpc"))
    pq1_dur = 3 * HOUR + 17 * 60 + 41
    pq1_start, pq1_host, pq1_idx = book.place(aws, 4, t0 + 1 * HOUR + 5 * 60 + 9, pq1_dur)
    pq1_end = pq1_start + pq1_dur
    pq1 = book.slurm_run(
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
    book.hold(pq1)
    pq2_dur = 5 * HOUR + 2 * 60 + 11
    pq2_start, pq2_host, pq2_idx = book.place(aws, 4, pq1_end + 47 * 60 + 3, pq2_dur)
    pq2 = book.slurm_run(
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
    book.hold(pq2)
    # 3. a failed run that hangs (0 % utilisation) for its last 40 minutes
    fr_dur = 2 * HOUR + 13 * 60 + 5
    fr_earliest = t0 + DAY + 4 * HOUR + 31 * 60 + 50
    fr_start, fr_host, fr_idx = book.place(aws, 4, fr_earliest, fr_dur)
    fr = book.slurm_run(
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
    book.hold(fr)
    # 4. an array job: 6 tasks of 2 GPUs placed first-fit on the AWS nodes
    arr_id = book.next_job_id("aws-hpc", 6)
    arr_submit = t0 + 5 * HOUR + 20 * 60
    for task in range(6):
        dur = int(rng.integers(90, 240)) * 60 + int(rng.integers(0, 60))
        st, host, idx = book.place(aws, 2, arr_submit + 60 * task, dur)
        r = book.slurm_run(
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
        book.hold(r)
    return mn


def onprem_runs(book: RunBook, onprem: list[str], outage: Outage) -> Run:
    """Lay out the on-prem cluster's named run 6 on `outage.host` and a partner (the fourth
    on-prem node, the second with fewer than four); the node is reserved for the outage."""
    t0 = book.t0
    full = list(range(8))
    # 6. a two-node training run on dgx-03/04 that dies when dgx-03 falls off the bus (XID 79)
    partner = onprem[3] if len(onprem) > 3 else onprem[1]
    x_run_start = t0 + DAY + 1 * HOUR + 44 * 60 + 2
    xr = book.slurm_run(
        "onprem",
        "llm-training",
        "llm",
        "mkumar",
        "train",
        "training",
        "moe-ablation-3",
        [outage.host, partner],
        8,
        {outage.host: full, partner: full},
        x_run_start,
        outage.start,
        "NODE_FAIL",
        exit_code=0,
        util=0.88,
    )
    book.hold(xr)
    book.calendar.reserve(outage.host, full, outage.start, outage.end)  # down: no run placed on it
    return xr


#: who submits the background jobs: (team, Slurm account, user), drawn uniformly
BACKGROUND_TEAMS = [
    ("research", "research", "pnovak"),
    ("research", "rl", "lchen"),
    ("data", "data", "okafor"),
    ("llm-training", "llm", "mkumar"),
]


def background(
    book: RunBook, cluster: str, hosts: list[str], *, whole_nodes: bool, per_day: int
) -> None:
    """Fill `cluster` with jobs submitted from 00:30 on day 1 to the window's end, `per_day` a
    day on average (exponential gaps), each placed first-fit on `hosts`: whole nodes or 1, 2, 4
    or 8 GPUs, 40 min to 7 h; 8 % fail; a job that cannot start in the window stays PENDING and
    one that outlasts it is RUNNING. Training when 8 GPUs for more than 3 h, else batch."""
    t0, t1, rng = book.t0, book.t1, book.rng
    t = t0 + 30 * 60
    j = -1
    while t < t1:
        j += 1
        team, account, user = BACKGROUND_TEAMS[int(rng.integers(0, len(BACKGROUND_TEAMS)))]
        k = 8 if whole_nodes else int(rng.choice([1, 2, 4, 8]))
        dur = int(rng.integers(40, 420)) * 60 + int(rng.integers(0, 60))
        kind = "training" if k == 8 and dur > 3 * HOUR else "batch"
        st, host, idx = book.place(hosts, k, t, dur)
        wait = st - t + int(rng.integers(0, 600))
        if st >= t1:
            # still pending when the window closes
            raw = str(book.next_job_id(cluster))
            book.runs.append(
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
        r = book.slurm_run(
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
        book.hold(r)
        t += int(rng.exponential(DAY / per_day))


def mig_gres_run(book: RunBook, host: str) -> Run:
    """Lay out run 11 on the on-prem MIG node `host` (GPU 0, MIG instance 3, 1g.10gb)."""
    start = book.t0 + 6 * HOUR
    run = book.slurm_run(
        "onprem",
        "research",
        "research",
        "pnovak",
        "mig",
        "batch",
        "mig-eval-1g",
        [host],
        0,
        {host: [0]},
        start,
        start + 9 * HOUR + 30 * 60,
        "COMPLETED",
        wait=95,
        util=0.62,
    )
    run.mig_instance, run.mig_profile = "3", "1g.10gb"
    return run
