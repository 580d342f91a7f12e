"""DCGM host names with a domain (docs/metrics.md, "Host names"): an exporter that reports its
node's FQDN (`fq-1.cluster.local`) while the inventory and Slurm use the short name (`fq-1`);
a hand-made fleet, every figure worked out here by hand.

One accounted day, 2026-11-16, DCGM every 60 s, no bill.
- `fq-1` (1 GPU) reports as `fq-1.cluster.local`; Slurm job 801 holds its GPU 00:00-06:00, the
  samples labelled hpc_job="801" at 90 %.
- `amb-1` (1 GPU) is in the inventory, and two names shorten to it: `amb-1.a.local` and
  `amb-1.b.local` (two machines of two domains?): ambiguous, both stay outside, each named.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from edge_rows import built_warehouse, dcgm, every, frame, slurm_job

from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.landing import land, write_schema_files

D1 = date(2026, 11, 16)
T1 = datetime(2026, 11, 16, tzinfo=UTC)
HOUR = timedelta(hours=1)


def build(home: Path) -> None:
    node = {"provider": "onprem", "site": "lab", "gpu_model": "H100", "cluster": "c1"}
    write_schema_files(home)
    write_config_tables(
        Config(
            inventory=[{"host": h, "gpus": 1, **node} for h in ("fq-1", "amb-1")],
            teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
        ),
        home,
    )
    record_accounted_days(home, [D1])
    rows: list[dict[str, Any]] = []
    for t in every(T1, T1 + 24 * HOUR, 60):
        held = t < T1 + 6 * HOUR
        labels = {"hpc_job": "801"} if held else {}
        sample = dcgm("fq-1.cluster.local", 0, t, "DCGM_FI_DEV_GPU_UTIL", 90.0 if held else 0.0)
        rows.append(sample | labels | {"uuid": "GPU-fq"})
        for domain in ("a", "b"):
            other = dcgm(f"amb-1.{domain}.local", 0, t, "DCGM_FI_DEV_GPU_UTIL", 0.0)
            rows.append(other | {"uuid": f"GPU-amb-{domain}"})
    land(home, "dcgm_samples", "dcgm", f"date={D1}", frame("dcgm_samples", rows))
    jobs = [slurm_job("801", "fq-1", 1, T1, T1 + 6 * HOUR)]
    land(home, "slurm_jobs", "slurm", f"date={D1}", frame("slurm_jobs", jobs))
    dbt_build(home, "fleetledger", run_id="names-run")


@pytest.fixture(scope="module")
def con(tmp_path_factory: pytest.TempPathFactory) -> duckdb.DuckDBPyConnection:
    home = tmp_path_factory.mktemp("names_fleet")
    build(home)
    yield from built_warehouse(home)


def test_a_reported_fqdn_is_its_inventory_node(con) -> None:
    # fq-1's GPU is the one the FQDN reported, busy 6 h under job 801, idle 18 h
    row = con.execute(
        "select gpu_uuid, reported, sum(busy_seconds) / 3600, sum(unallocated_seconds) / 3600 "
        "from fct_gpu_hours join dim_gpus using (gpu_uuid, host, gpu_index) "
        "where host = 'fq-1' group by all"
    ).fetchall()
    assert row == [("GPU-fq", True, 6.0, 18.0)]
    run = con.execute(
        "select busy_gpu_hours, mapping from fct_run_costs join fct_runs using (run_id) "
        "where job_id = '801'"
    ).fetchall()
    assert run == [(6.0, "exact")]


def test_data_health_says_which_name_became_which_host_and_which_stayed_outside(con) -> None:
    found = con.execute(
        'select "check", severity, count, message from fct_data_health '
        "where \"check\" like 'host_%' order by 1"
    ).fetchall()
    assert found == [
        (
            "host_from_short_name:fq-1.cluster.local:fq-1",
            "info",
            1440,
            "samples of fq-1.cluster.local took their host fq-1: the name up to its first dot is"
            " that inventory node, and no other reported name shortens to it",
        ),
        *[
            (
                f"host_not_in_inventory:amb-1.{d}.local",
                "warning",
                1440,
                f"DCGM host amb-1.{d}.local (1440 samples) is not in the inventory: its samples"
                " are in no mart; add it to `inventory:` (host, provider, site, gpus), or set the"
                " source's `node_label` option if it is an exporter pod",
            )
            for d in ("a", "b")
        ],
    ]
    # amb-1 reported nothing under its own name: its slot is a placeholder, never reported
    assert con.execute(
        "select gpu_uuid, reported from dim_gpus where host = 'amb-1'"
    ).fetchall() == [("amb-1:gpu0", False)]
