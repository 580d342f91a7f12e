"""The GKE cluster's pods (`gke-ml`; its DCGM exporter labels samples with pod and namespace), in
the order they are laid out:

7. a 4-GPU vLLM inference server (GPUs 0-3) on every GKE node, up the whole window, with a
   diurnal load; the last node's is replaced by a rolling update 2 h after the later of the
   first pod dump and the notebook's start (8), while the notebook holds the node's other GPUs:
   the old pod is deleted (no later dump shows it, its fct_runs state is `Deleted`) and the new
   pod starts on the same GPUs at once (none when the window has no such time);
8. `jupyter-alice`: an interactive notebook holding GPUs 4-7 of the last GKE node idle over the
   weekend, from the window's first Friday 17:02:31 (day 1 17:02:31 when that Friday is less
   than 2 h before the window's end) to Monday 09:12:05 (still Running when that is past it);
9. `embed-batch-*`: 2-GPU batch embedding pods on the first GKE node's free GPUs, the first from
   03:00 on day 1, each next one 1-3 h after the last one's start (at most 8 a day); the third
   (`embed-batch-002`) is OOMKilled a third of the way in, the fifth (`embed-batch-004`)
   evicted half way (pod reason `Evicted`, container `Error` 137: failure_class `infra`);
10. with `mig=True`, on the MIG node (nodes.mig_node): a pod on every MIG instance but one
    (GPU 0's instance 3), and three ETL pods on the time-sliced GPUs, two of them sharing GPU 4.
"""

from __future__ import annotations

from datetime import date

from fleetledger.generator.model import DAY, HOUR, Node, Run, stable_hex
from fleetledger.generator.runs import RunBook


def _rolling_update_at(t0: int, t1: int, nb_start: int, nb_end: int) -> int | None:
    """When the last GKE node's vLLM server is replaced (7b): 2 h after the first pod dump (day
    1 23:59:59, so a dump shows the old pod) or after the notebook starts, whichever is later,
    while the notebook holds the node's other 4 GPUs (the new pod then needs the old pod's
    GPUs); None when the window has no such time."""
    at = max(nb_start, t0 + DAY) + 2 * HOUR
    return at if at < min(nb_end, t1 - HOUR) else None


def gke_runs(book: RunBook, gke: list[str], start: date) -> None:
    """Lay out pods 7-9 on the GKE nodes `gke`; the window starts on day `start`."""
    t0, t1, rng, days = book.t0, book.t1, book.rng, book.days
    # 8. (its times first) an interactive notebook holding 4 GPUs idle over the weekend
    wd = start.weekday()
    fri = t0 + ((4 - wd) % 7) * DAY
    nb_start = fri + 17 * HOUR + 2 * 60 + 31
    nb_end = fri + 3 * DAY + 9 * HOUR + 12 * 60 + 5
    if nb_start >= t1 - 2 * HOUR:
        nb_start = t0 + 17 * HOUR + 2 * 60 + 31
    roll_at = _rolling_update_at(t0, t1, nb_start, nb_end)
    # 7. inference pods: a 4-GPU vLLM server per GKE node, up the whole window; 7b. the last
    # node's is replaced by a rolling update at `roll_at`: the old pod is deleted (no later dump
    # shows it) and the new one starts on the same GPUs at once
    for i, host in enumerate(gke):
        rolled = roll_at is not None and i == len(gke) - 1
        server = book.pod(
            f"vllm-llama-70b-{stable_hex('vllm', i, n=10)}-{stable_hex('rs', i, n=5)}",
            "inference",
            "serving",
            "inference",
            host,
            [0, 1, 2, 3],
            t0 + 17 * 60 + 11 * i,
            roll_at if rolled else None,
            "Deleted" if rolled else "Running",
            profile="diurnal",
            labels={"app": "vllm", "team": "serving"},
            deleted=rolled,
        )
        if rolled and roll_at is not None:
            # the same server: its load, and a wait of 5 s given rather than drawn, so that the
            # replacement draws nothing and every later run of the fleet is laid out as before
            book.pod(
                f"vllm-llama-70b-{stable_hex('vllm2', i, n=10)}-{stable_hex('rs2', i, n=5)}",
                "inference",
                "serving",
                "inference",
                host,
                [0, 1, 2, 3],
                roll_at,
                None,
                "Running",
                util=server.util_mean,
                profile="diurnal",
                labels={"app": "vllm", "team": "serving"},
                wait=5,
            )
    book.pod(
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
    # 9. batch embedding pods on the first GKE node's free GPUs, one OOMKilled
    bt = t0 + 3 * HOUR
    k = 0
    while bt < t1 - 4 * HOUR and k < 8 * days:
        dur = int(rng.integers(70, 200)) * 60 + int(rng.integers(0, 60))
        st, host, idx = book.place(gke[:1], 2, bt, dur)
        if st + dur >= t1:
            break
        oom, evicted = k == 2, k == 4
        end_t = st + (dur // 3 if oom else dur // 2 if evicted else dur)
        book.pod(
            f"embed-batch-{k:03d}",
            "data-eng",
            "data",
            "batch",
            host,
            idx,
            st,
            end_t,
            "Failed" if oom or evicted else "Succeeded",
            exit_code=137 if oom or evicted else 0,
            labels={"app": "embedder", "team": "data"},
            pod_reason="Evicted" if evicted else None,
        )
        bt = st + int(rng.integers(1, 4)) * HOUR
        k += 1


def mig_runs(book: RunBook, mnode: Node) -> None:
    """Lay out the MIG node's pods (10): MIG instances and time-sliced GPUs are shared, so these
    pods reserve nothing in the calendar."""
    t0, t1, rng = book.t0, book.t1, book.rng
    for g, insts in mnode.mig.items():
        for inst in insts:
            if g == 0 and inst[0] == "3":
                continue  # an instance nobody uses
            a = t0 + int(rng.integers(1, 10)) * HOUR + int(rng.integers(0, 3600))
            b = a + int(rng.integers(6, 30)) * HOUR + int(rng.integers(0, 3600))
            end = b if b < t1 else None
            book.pod(
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
        return book.pod(
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
