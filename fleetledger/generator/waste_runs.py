"""The waste cases (`generate(..., waste_cases=True)`, on MIG fleets): two runs for the
recommendations that only a generated case can prove (docs/metrics.md, "Recommendations"),
laid out after every other run with their waits and loads given, so they take no draw from the
fleet's shared stream and move no other run; their DCGM samples draw from streams of their own
(`Run.own_stream`, telemetry.py), so every other sample of their GPUs is as without them:

12. `jupyter-tmoreau`: a notebook pod (namespace `research-notebooks`, user `tmoreau`) on the
    whole GPU 7 of the GKE MIG node (nodes.mig_node) from 01:23:07 on day 1 to 2 h 10 min
    before the window's end, at 12 % utilisation, whose GPU reports 5,000-7,000 MiB of memory
    used (RIGHT_SIZE_MEMORY_MIB): it fits a 1g.10gb MIG instance (right_size_mig);
13. `vllm-llama-8b-*`: two 1-GPU vLLM servers of SMALL_MODEL on the MIG node, the first on its
    whole GPU 6 from 01:04:09 on day 1, the second on its time-sliced GPU 5 from 10:06:41 on
    day 1 (after the ETL pod there ends; it shares the GPU with nobody), both to the window's
    end at 30 % utilisation; the first one's load test runs it at 90 % from 14:00 to 16:00 on
    day 1 (LOAD_TEST): at that best per-GPU rate the two servers' p95 hourly tokens/s fit on
    one GPU (consolidate_replicas).
"""

from __future__ import annotations

from fleetledger.generator.model import HOUR, Fleet, Run, stable_hex
from fleetledger.generator.runs import RunBook

RIGHT_SIZE_GPU = 7
RIGHT_SIZE_UTIL = 0.12
RIGHT_SIZE_MEMORY_MIB = (5_000, 7_000)
SMALL_MODEL = "meta-llama/Llama-3.1-8B-Instruct"
SMALL_MODEL_UTIL = 0.3
#: the servers' GPUs of the MIG node and their starts (seconds after the window's start)
SMALL_MODEL_SERVERS = ((6, HOUR + 4 * 60 + 9), (5, 10 * HOUR + 6 * 60 + 41))
#: the first server's load test: (from, to) seconds after the window's start, its utilisation
LOAD_TEST = (14 * HOUR, 16 * HOUR, 0.9)


def right_size_run(book: RunBook, host: str) -> Run:
    """Lay out run 12 on the GKE MIG node `host`."""
    run = book.pod(
        "jupyter-tmoreau",
        "research-notebooks",
        "research",
        "interactive",
        host,
        [RIGHT_SIZE_GPU],
        book.t0 + HOUR + 23 * 60 + 7,
        book.t1 - 2 * HOUR - 10 * 60,
        "Succeeded",
        util=RIGHT_SIZE_UTIL,
        labels={"app": "jupyter", "user": "tmoreau"},
        wait=41,
    )
    run.memory_mib = RIGHT_SIZE_MEMORY_MIB
    run.own_stream = True
    return run


def replica_runs(book: RunBook, host: str) -> list[Run]:
    """Lay out the two servers 13 on the GKE MIG node `host` (the time-sliced GPU shared, as
    gke_runs.mig_runs does: nothing reserved)."""
    runs = []
    for k, (gpu, offset) in enumerate(SMALL_MODEL_SERVERS):
        run = book.pod(
            f"vllm-llama-8b-{stable_hex('vllm-8b', k, n=10)}-{stable_hex('rs-8b', k, n=5)}",
            "inference",
            "serving",
            "inference",
            host,
            [gpu],
            book.t0 + offset,
            None,
            "Running",
            util=SMALL_MODEL_UTIL,
            labels={"app": "vllm", "team": "serving"},
            wait=7,
            reserve=False,
        )
        run.served_model = SMALL_MODEL
        run.own_stream = True
        runs.append(run)
    lt_from, lt_to, lt_util = LOAD_TEST
    runs[0].load_test = (book.t0 + lt_from, book.t0 + lt_to, lt_util)
    return runs


def waste_runs(book: RunBook, gke_mig_host: str) -> None:
    """Lay out runs 12 and 13."""
    right_size_run(book, gke_mig_host)
    replica_runs(book, gke_mig_host)


def waste_truth(fleet: Fleet) -> dict:
    """The ground truth of runs 12 and 13 (`scenarios`' `right_size_mig` and
    `consolidate_replicas`); empty when the fleet has no waste cases."""
    probe = next((r for r in fleet.runs if r.memory_mib is not None), None)
    replicas = [r for r in fleet.runs if r.served_model == SMALL_MODEL]
    if probe is None or not replicas:
        return {}
    tested = next(r for r in replicas if r.load_test is not None)
    return {
        "right_size_mig": {
            "run_id": probe.run_id,
            "host": probe.nodes[0],
            "gpu_index": RIGHT_SIZE_GPU,
            "utilization": RIGHT_SIZE_UTIL,
            "memory_mib": list(RIGHT_SIZE_MEMORY_MIB),
        },
        "consolidate_replicas": {
            "model_name": SMALL_MODEL,
            "run_ids": [r.run_id for r in replicas],
            "host": replicas[0].nodes[0],
            "gpu_indices": [g for g, _ in SMALL_MODEL_SERVERS],
            "utilization": SMALL_MODEL_UTIL,
            "load_test": {"run_id": tested.run_id, "utilization": LOAD_TEST[2]},
        },
    }
