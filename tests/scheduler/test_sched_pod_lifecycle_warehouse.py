"""Issue 12, items 1, 2 and 10, through the whole dbt project: pods that vanish between dumps
end (a rolling update on one GPU, a deleted pod, a deleted Pending pod), the failure class of
evicted / node-lost pods, runs from kube-state-metrics for a cluster without pod dumps, and
Kueue's admission wait, evictions and requeues in fct_runs / fct_ops_daily. The fleet is
described in k8s_lifecycle_fleet.py; every expected figure is worked out by hand below."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from k8s_lifecycle_fleet import DAYS, T1, at, write_sources
from test_edges import focus_line, frame

from fleetledger.config import Config, Source
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import land, write_schema_files
from ingest.registry import ingest_source

#: $ per day of each node's daily FOCUS line (GPUs: a 1, b 1, c 2, k 1)
DAILY = {"k8s-a": 24.0, "k8s-b": 48.0, "k8s-c": 48.0, "k8s-k": 24.0}
GPUS = {"k8s-a": 1, "k8s-b": 1, "k8s-c": 2, "k8s-k": 1}


def config(locations: dict[str, Path]) -> Config:
    return Config(
        inventory=[
            {"host": h, "resource_id": f"vm-{h}", "provider": "azure", "site": "az1", "gpus": n}
            for h, n in GPUS.items()
        ],
        teams=[{"team": "ml-team", "match": {"k8s_namespace": ["ml"]}}],
        sources=[
            Source(
                name="pods",
                kind="kubernetes",
                location=str(locations["pods"]),
                options={"cluster": "gke-a"},
            ),
            Source(
                name="kq",
                kind="kueue",
                location=str(locations["kueue"]),
                options={"cluster": "gke-a"},
            ),
            Source(
                name="ksm",
                kind="kubernetes",
                location=str(locations["ksm"]),
                options={"format": "kube_state_metrics", "cluster": "ksm-1"},
            ),
            Source(
                name="ksm-gke",
                kind="kubernetes",
                location=str(locations["ksm_gke"]),
                options={"format": "kube_state_metrics", "cluster": "gke-a"},
            ),
        ],
    )


@pytest.fixture(scope="module")
def wh(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    base = tmp_path_factory.mktemp("k8s_lifecycle")
    home = base / "home"
    cfg = config(write_sources(base / "src"))
    write_schema_files(home)
    write_config_tables(cfg, home)
    record_accounted_days(home, list(DAYS))
    for source in cfg.sources:
        ingest_source(cfg, source, list(DAYS), home)
    lines = [
        focus_line(
            str(10 * i + d), f"vm-{h}", T1 + timedelta(days=d), T1 + timedelta(days=d + 1), c
        )
        for i, (h, c) in enumerate(DAILY.items())
        for d in range(3)
    ]
    land(home, "focus_lines", "azure-focus", "period=2026-11", frame("focus_lines", lines))
    dbt_build(home, "fleetledger", run_id="k8s-lifecycle")
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    con.execute("set TimeZone = 'UTC'")
    yield con
    con.close()


def runs(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    cur = con.execute(
        """
        select r.run_id, r.job_id, r.cluster, r.state, r.failure_class, r.started_at, r.ended_at,
               r.gpu_hours, c.cost, r.queue, r.submitted_at, r.queue_wait_seconds, r.team,
               r.kueue_workload, r.kueue_cluster_queue, r.kueue_admission_wait_seconds,
               r.kueue_evictions, r.kueue_requeues
        from fct_runs r join fct_run_costs c using (run_id)
        """
    )
    cols = [d[0] for d in cur.description]
    return {row[1]: dict(zip(cols, row, strict=True)) for row in cur.fetchall()}


D2_DUMP = at(2, 24) - timedelta(seconds=1)  # pods-D2.json: 2026-11-17 23:59:59Z
# seconds from D1 12:00 to that dump: 36 h - 1 s
S_12_TO_D2_DUMP = 36 * 3600 - 1  # 129,599 s


def test_every_pod_run_and_nothing_else(wh: duckdb.DuckDBPyConnection) -> None:
    """Ten runs: eight pods of gke-a's dumps and two of ksm-1's scrapes; the scrapes of gke-a
    (which has pod dumps) add none, the GPU-less `tiny` none."""
    got = runs(wh)
    assert sorted(got) == sorted(
        [
            "u-web-old", "u-web-new", "u-adhoc", "u-queued", "u-evicted", "u-oom", "u-lost",
            "u-train-1-worker", "uk-train", "uk-serve",
        ]
    )  # fmt: skip
    assert {r["team"] for r in got.values()} == {"ml-team"}


def test_rolling_update_on_one_gpu(wh: duckdb.DuckDBPyConnection) -> None:
    """Item 1. web-old is in the dumps of D1 and D2 and missing from D3's (23:59:59): it ended
    by then, and k8s-a's only GPU went to web-new at its start, D3 06:00, so web-old ends there
    (never before the last dump that showed it, D2 23:59:59). k8s-a costs $1/GPU-h.
    - web-old: D1 00:00 -> D3 06:00 = 54 h x 1 GPU = 54 GPU-h, $54.00, state Deleted;
    - web-new: D3 06:00 -> the end of the window (D3 24:00) = 18 GPU-h, $18.00: the whole GPU;
    - k8s-a has no unallocated second on D3 (6 h + 18 h = 24 h, $6 + $18 = $24)."""
    got = runs(wh)
    old, new = got["u-web-old"], got["u-web-new"]
    assert (old["state"], old["ended_at"], old["failure_class"]) == ("Deleted", at(3, 6), None)
    assert old["gpu_hours"] == pytest.approx(54.0)
    assert old["cost"] == pytest.approx(54.0, abs=0.01)
    assert (new["state"], new["started_at"], new["ended_at"]) == ("Running", at(3, 6), None)
    assert new["gpu_hours"] == pytest.approx(18.0)
    assert new["cost"] == pytest.approx(18.0, abs=0.01)
    idle = wh.execute(
        "select coalesce(sum(gpu_hours), 0) from fct_idle_gpu_hours "
        "where host = 'k8s-a' and cast(day as date) = ?",
        [at(3, 0).date()],
    ).fetchone()
    assert idle == (pytest.approx(0.0, abs=1e-9),)


def test_deleted_pod_ends_at_the_first_dump_that_lacks_it(wh: duckdb.DuckDBPyConnection) -> None:
    """Item 1. adhoc (k8s-b, $2/GPU-h) started D1 12:00, Running in D1's dump, missing from D2's
    (23:59:59) and nothing needed its GPU: it ends at that dump. 129,599 s x 1 GPU =
    35.99972 GPU-h, x $2/h = $71.999444. The Pending `queued` (2 GPUs), created D1 20:00 and
    missing from D2's dump, ends there without starting: pending at D1's end, not at D2's."""
    got = runs(wh)
    adhoc, queued = got["u-adhoc"], got["u-queued"]
    assert (adhoc["state"], adhoc["ended_at"]) == ("Deleted", D2_DUMP)
    assert adhoc["gpu_hours"] == pytest.approx(S_12_TO_D2_DUMP / 3600)
    assert adhoc["cost"] == pytest.approx(S_12_TO_D2_DUMP * 2 / 3600, abs=0.01)
    assert (queued["state"], queued["started_at"], queued["ended_at"]) == (
        "Deleted",
        None,
        D2_DUMP,
    )
    assert queued["gpu_hours"] == 0


def test_failure_class_of_evicted_and_node_lost_pods(wh: duckdb.DuckDBPyConnection) -> None:
    """Item 2. evicted (Failed, status.reason Evicted, container Error 137): infra, 10 h x $1 =
    $10; oom (Failed, OOMKilled): user, $4; lost (Running on D1, Failed / NodeLost with no
    containerStatuses on D2): infra, ended by the first dump that shows it Failed (D2
    23:59:59): 129,599 s x $1/h = $35.999722."""
    got = runs(wh)
    ev, oom, lost = got["u-evicted"], got["u-oom"], got["u-lost"]
    assert (ev["state"], ev["failure_class"], ev["ended_at"]) == ("Failed", "infra", at(1, 10))
    assert ev["cost"] == pytest.approx(10.0, abs=0.01)
    assert (oom["failure_class"], oom["cost"]) == ("user", pytest.approx(4.0, abs=0.01))
    assert (lost["state"], lost["failure_class"], lost["ended_at"]) == ("Failed", "infra", D2_DUMP)
    assert lost["cost"] == pytest.approx(S_12_TO_D2_DUMP / 3600, abs=0.01)


def test_runs_from_kube_state_metrics(wh: duckdb.DuckDBPyConnection) -> None:
    """Item 10. ksm-1 has no pod dumps: its runs come from the scrapes (k8s-k, $1/GPU-h).
    k-train: kube_pod_start_time D1 01:00, kube_pod_completion_time D1 15:00 (Succeeded at
    18:00) = 14 GPU-h, $14; k-serve: started D1 16:00, Running at 18:00, missing from the scrape
    of D2 06:00 = 14 GPU-h, $14, Deleted. k8s-k's D1 idle: 00:00-01:00 and 15:00-16:00 = 2 h."""
    got = runs(wh)
    train, serve = got["uk-train"], got["uk-serve"]
    assert (train["cluster"], train["state"], train["started_at"], train["ended_at"]) == (
        "ksm-1",
        "Succeeded",
        at(1, 1),
        at(1, 15),
    )
    assert (train["gpu_hours"], train["cost"]) == (
        pytest.approx(14.0),
        pytest.approx(14.0, abs=0.01),
    )
    assert (serve["state"], serve["started_at"], serve["ended_at"]) == (
        "Deleted",
        at(1, 16),
        at(2, 6),
    )
    assert serve["cost"] == pytest.approx(14.0, abs=0.01)
    idle = wh.execute(
        "select sum(gpu_hours) from fct_idle_gpu_hours where host = 'k8s-k' "
        "and cast(day as date) = ?",
        [at(1, 0).date()],
    ).fetchone()
    assert idle == (pytest.approx(2.0),)


def test_kueue_admission_wait_evictions_and_requeues(wh: duckdb.DuckDBPyConnection) -> None:
    """Item 10. train-1-worker (owner Job train-1, uid job-train-1) belongs to train-1-wl: it was
    submitted when the workload was (D1 22:00), so its queue wait is D2 02:05 - D1 22:00 =
    4 h 5 min = 14,700 s (not the 3 min since the pod's creation); the workload waited D1 22:00
    -> D2 02:00 = 14,400 s for admission, was evicted once and requeued once; its queue is the
    LocalQueue. 5 h 55 min x $1/h = $5.916667."""
    kq = runs(wh)["u-train-1-worker"]
    assert (kq["submitted_at"], kq["queue_wait_seconds"], kq["queue"]) == (
        at(1, 22),
        14_700,
        "team-a-queue",
    )
    assert (
        kq["kueue_workload"],
        kq["kueue_cluster_queue"],
        kq["kueue_admission_wait_seconds"],
        kq["kueue_evictions"],
        kq["kueue_requeues"],
    ) == ("train-1-wl", "gpu-cq", 14_400, 1, 1)
    assert (kq["state"], kq["failure_class"]) == ("Succeeded", None)
    assert kq["cost"] == pytest.approx(5 + 55 / 60, abs=0.01)


def test_ops_daily(wh: duckdb.DuckDBPyConnection) -> None:
    """fct_ops_daily of the three days, by hand:
    D1: ended evicted 10:00, oom 04:00, k-train 15:00 = 3, completed 1 (k-train), infra 1, user
        1; pending at the end: queued (2 GPUs) and train-1-worker (submitted with its workload
        D1 22:00, started D2 02:05: 1 GPU) = 2 runs, 3 GPUs; train-1-wl has a pod, so it is not
        counted again.
    D2: ended adhoc, queued, lost (23:59:59), train-1-worker 08:00, k-serve 06:00 = 5,
        completed 1, infra 1 (lost); pending 0; train-1-wl admitted (14,400 s), 1 eviction and 1
        requeue first shown by D2's dump.
    D3: ended web-old 06:00 = 1; pending: big-wl (8 GPUs, never admitted, no pod) = 1, 8."""
    got = wh.execute(
        """
        select cast(day as varchar), runs_ended, runs_completed, runs_failed_infra,
               runs_failed_user, runs_pending_at_day_end, pending_gpus_at_day_end,
               kueue_workloads_pending_at_day_end, kueue_pending_gpus_at_day_end,
               kueue_workloads_admitted, kueue_admission_wait_p50_seconds, kueue_evictions,
               kueue_requeues
        from fct_ops_daily order by day
        """
    ).fetchall()
    assert got == [
        ("2026-11-16", 3, 1, 1, 1, 2, 3, 0, 0, 0, None, 0, 0),
        ("2026-11-17", 5, 1, 1, 0, 0, 0, 0, 0, 1, 14_400.0, 1, 1),
        ("2026-11-18", 1, 0, 0, 0, 1, 8, 1, 8, 0, None, 0, 0),
    ]


def test_reconciliation_holds(wh: duckdb.DuckDBPyConnection) -> None:
    """Run cost + unallocated/down idle cost = the bill, per day: ($24 + $48 + $48 + $24) = $144."""
    got = wh.execute(
        """
        with r as (
            select cast(hour as date) as d, sum(cost) as c from fct_gpu_hours group by 1
        )
        select cast(d as varchar), round(c, 6) from r order by d
        """
    ).fetchall()
    assert got == [(str(d), 144.0) for d in DAYS]
