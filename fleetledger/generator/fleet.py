"""Lay out a synthetic fleet from a seed: its nodes, runs and incidents (the data model is in
model.py). Times are integer seconds since the Unix epoch (UTC).

`build_fleet` tells the fleet's story in the order it is laid out, which is also the order of
the seeded random draws (runs.py): read it first, then the builder each step names.
"""

from __future__ import annotations

from datetime import date

import numpy as np

from fleetledger.generator.gke_runs import gke_runs, mig_runs
from fleetledger.generator.gpu_calendar import Calendar
from fleetledger.generator.incidents import bus_outage, health_events, scrape_gap, straggler
from fleetledger.generator.model import DAY, Fleet, epoch
from fleetledger.generator.nodes import (
    build_nodes,
    hosts,
    mig_node,
    onprem_mig_node,
    scrape_clock,
)
from fleetledger.generator.runs import RunBook
from fleetledger.generator.slurm_runs import aws_runs, background, mig_gres_run, onprem_runs
from fleetledger.generator.waste_runs import waste_runs


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
    mig_gres: bool = False,
    waste_cases: bool = False,
) -> Fleet:
    """The fleet of `days` days from `start`, the same for the same arguments:

    1. the nodes (nodes.py): AWS p5 instances, GKE a3 nodes, on-prem DGX boxes;
    2. the AWS cluster's named runs (slurm_runs.py), then its incidents (incidents.py): the
       straggler GPU of the two-node training run and a scrape gap on the last node;
    3. the XID 79 outage of an on-prem node, and the two-node on-prem run it kills;
    4. the GKE pods (gke_runs.py): inference servers, the idle weekend notebook, batch pods;
       with `mig`, a MIG / time-sliced node and its pods;
    5. background Slurm load around all of these, on AWS and on-prem; then, with `mig_gres`,
       an on-prem MIG node and its Slurm job requesting a MIG GRES (`gres/gpu:1g.10gb=1`),
       with no random draw, so the other runs are laid out as without it;
    6. with `waste_cases` (needs `mig`), the recommendation waste cases (waste_runs.py) on the
       MIG node: a notebook on a whole GPU that fits a MIG instance and two vLLM servers that
       fit on one GPU, with no random draw from the shared stream;
    7. the health events (incidents.py), at fixed times: no draws, no run changes.
    """
    if days < 2:
        raise ValueError("a fleet needs at least 2 days")
    if aws_nodes < 2 or gcp_nodes < 1 or onprem_nodes < 2:
        raise ValueError("a fleet needs at least 2 AWS, 1 GCP and 2 on-prem nodes")
    if waste_cases and not mig:
        raise ValueError("waste_cases needs mig (its vLLM servers run on the MIG node)")
    nodes = build_nodes(aws_nodes, gcp_nodes, onprem_nodes)
    t0 = epoch(start)
    t1 = t0 + days * DAY
    book = RunBook(np.random.default_rng(seed), Calendar(nodes), seed=seed, t0=t0, t1=t1)
    aws, gke, onprem = hosts(nodes, "aws"), hosts(nodes, "gcp"), hosts(nodes, "onprem")

    train = aws_runs(book, aws)
    stragglers = [straggler(train)]
    gaps = [scrape_gap(t0, aws[-1])]

    onprem_hosts = [n for n in nodes if n.provider == "onprem"]
    outage = bus_outage(onprem_hosts, t0=t0, scrape_interval=scrape_interval)
    onprem_runs(book, onprem, outage)

    gke_runs(book, gke, start)
    if mig:
        mnode = mig_node(seed, len(nodes))
        nodes.append(mnode)
        book.calendar.add(mnode)
        mig_runs(book, mnode)

    background(book, "aws-hpc", aws, whole_nodes=False, per_day=32)
    background(book, "onprem", onprem, whole_nodes=True, per_day=11)
    if mig_gres:
        onode = onprem_mig_node(len(nodes))
        nodes.append(onode)
        book.calendar.add(onode)
        mig_gres_run(book, onode.host)
    if waste_cases:
        waste_runs(book, mnode.host)

    throttles, ecc_errors, row_remaps, gpu_faults = health_events(
        t0=t0,
        t1=t1,
        aws=aws,
        onprem=onprem,
        runs=book.runs,
        outage=outage,
        straggler=stragglers[0],
        train=train,
        scrape_after=scrape_clock(nodes, t0=t0, scrape_interval=scrape_interval),
    )
    return Fleet(
        start_day=start,
        days=days,
        seed=seed,
        scrape_interval=scrape_interval,
        nodes=nodes,
        runs=sorted(
            book.runs, key=lambda r: (r.scheduler, r.cluster, r.submitted, r.job_id, r.attempt)
        ),
        outages=[outage],
        gaps=gaps,
        stragglers=stragglers,
        throttles=throttles,
        ecc_errors=ecc_errors,
        row_remaps=row_remaps,
        gpu_faults=gpu_faults,
    )
