"""The synthetic fleet generator: every source in its real format, plus `ground_truth.json`.

`generate()` is deterministic for its arguments. See docs/generator-layout.md for what it writes.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, date, datetime
from pathlib import Path

import yaml

from fleetledger.generator import dcgm_shapes
from fleetledger.generator import model as M
from fleetledger.generator.bill_files import write_cur, write_gcp
from fleetledger.generator.fleet import build_fleet
from fleetledger.generator.health_truth import health_truth
from fleetledger.generator.log_files import last_checkpoints, plan_logs, write_logs
from fleetledger.generator.model import DAY, Fleet, inventory_entry
from fleetledger.generator.power_files import write_power
from fleetledger.generator.scheduler_files import write_node_events, write_pods, write_sacct
from fleetledger.generator.telemetry import node_series
from fleetledger.generator.truth import Truth
from fleetledger.generator.vllm_files import write_vllm
from fleetledger.generator.waste_runs import waste_truth

DEFAULT_START = date(2026, 10, 1)
IDLE_THRESHOLD = 0.05

__all__ = ["DEFAULT_START", "generate", "build_fleet"]


#: the demo's over-budget team: its monthly budget is set under what it spends (below)
OVER_BUDGET_TEAM = "research"
#: the share of the over-budget team's run cost in the last calendar month its budget is
OVER_BUDGET_SHARE = 0.8


def over_budget_amount(fleet: Fleet, run_costs: dict[str, float]) -> float:
    """The over-budget team's monthly budget: OVER_BUDGET_SHARE x the direct cost of its runs
    that start in the fleet's last calendar month (all their hours are in that month, so the
    month's spend to date is at least that cost: the 100 % threshold is crossed on actual),
    rounded down to 100, at least 100."""
    last = datetime.fromtimestamp(fleet.t0 + (fleet.days - 1) * DAY, UTC)
    month_start = datetime(last.year, last.month, 1, tzinfo=UTC).timestamp()
    cost = sum(
        run_costs.get(r.run_id, 0.0)
        for r in fleet.runs
        if r.team == OVER_BUDGET_TEAM and r.start is not None and r.start >= month_start
    )
    return max(100.0, float(int(OVER_BUDGET_SHARE * cost / 100) * 100))


def _config(fleet: Fleet, over_budget: float = 40000.0) -> dict:
    onprem = [n for n in fleet.nodes if n.provider == "onprem"]
    return {
        "reporting_currency": "USD",
        "idle_threshold": IDLE_THRESHOLD,
        "sources": [
            {"name": "aws-cur", "kind": "aws_cur", "location": "sources/aws/cur/fleet-cur"},
            {
                "name": "aws-slurm",
                "kind": "slurm",
                "location": "sources/aws/sacct/sacct-{date}.txt",
                "options": {"cluster": "aws-hpc", "events": "sources/aws/sacct/events.txt"},
            },
            {
                "name": "aws-logs",
                "kind": "run_logs",
                "location": "sources/aws/logs/slurm-*.out",
                "options": {"scheduler": "slurm", "cluster": "aws-hpc"},
            },
            {
                "name": "aws-dcgm",
                "kind": "dcgm",
                "location": "sources/aws/dcgm/{date}/*.prom.gz",
                "options": {"format": "prometheus_text"},
            },
            {
                "name": "gcp-billing",
                "kind": "gcp_billing",
                "location": "sources/gcp/billing/*.jsonl",
            },
            {
                "name": "gke-pods",
                "kind": "kubernetes",
                "location": "sources/gcp/k8s/pods-{date}.json",
                "options": {"cluster": "gke-ml"},
            },
            {
                "name": "gke-logs",
                "kind": "run_logs",
                "location": "sources/gcp/logs/*/*.log",
                "options": {"scheduler": "kubernetes", "cluster": "gke-ml"},
            },
            {
                "name": "gke-dcgm",
                "kind": "dcgm",
                "location": "sources/gcp/dcgm/{date}/*.prom.gz",
                "options": {"format": "prometheus_text", "node_label": "node"},
            },
            {
                "name": "gke-vllm",
                "kind": "inference_metrics",
                "location": "sources/gcp/vllm/{date}/*.prom.gz",
                "options": {"format": "prometheus_text"},
            },
            {
                "name": "onprem-slurm",
                "kind": "slurm",
                "location": "sources/onprem/sacct/sacct-{date}.txt",
                "options": {"cluster": "onprem", "events": "sources/onprem/sacct/events.txt"},
            },
            {
                "name": "onprem-logs",
                "kind": "run_logs",
                "location": "sources/onprem/logs/slurm-*.out",
                "options": {"scheduler": "slurm", "cluster": "onprem"},
            },
            {
                "name": "onprem-dcgm",
                "kind": "dcgm",
                "location": "sources/onprem/dcgm/{date}/*.prom.gz",
                "options": {"format": "prometheus_text"},
            },
            {
                "name": "onprem-power",
                "kind": "power",
                "location": "sources/onprem/power/power-{date}.csv",
            },
        ],
        "inventory": [inventory_entry(n) for n in fleet.nodes],
        "teams": [
            {"team": "llm-training", "owners": ["mkumar"], "match": {"slurm_account": ["llm"]}},
            {
                "team": "research",
                "owners": ["lchen"],
                "match": {
                    "slurm_account": ["research", "rl"],
                    "k8s_namespace": ["research-notebooks"],
                },
            },
            {
                "team": "data",
                "owners": ["okafor"],
                "match": {"slurm_account": ["data"], "k8s_namespace": ["data-eng"]},
            },
            {
                "team": "serving",
                "owners": ["sre-serving"],
                "match": {"k8s_namespace": ["inference"], "cloud_tag": {"team": "serving"}},
            },
            {
                "team": "gpu-platform",
                "owners": ["platform"],
                "match": {"cloud_tag": {"user_team": "gpu-platform", "team": "gpu-platform"}},
            },
        ],
        "kind_rules": [
            {"kind": "training", "match": {"partition": "^train$"}},
            {"kind": "interactive", "match": {"namespace": "notebooks$"}},
            {"kind": "inference", "match": {"namespace": "^inference$"}},
            {"kind": "batch", "match": {}},
        ],
        "rate_cards": [
            {
                "site": "dc1",
                "hosts": [n.host for n in onprem],
                "capex": M.DGX_CAPEX,
                "amortisation_months": M.DGX_AMORTISATION_MONTHS,
                "power_price_per_kwh": M.POWER_PRICE_PER_KWH,
                "host_overhead_w": M.HOST_OVERHEAD_W,
            }
        ],
        # the budget form of DESIGN.md; research is over budget on actual spend (its amount
        # comes from the ground truth, `over_budget_amount`); no channels: the log only
        "budgets": [
            {"name": "llm-training-monthly", "scope": {"team": "llm-training"}, "amount": 120000},
            {
                "name": f"{OVER_BUDGET_TEAM}-monthly",
                "scope": {"team": OVER_BUDGET_TEAM},
                "amount": over_budget,
                "period": "month",
                "thresholds": [0.5, 0.8, 1.0],
                "basis": ["actual", "forecast"],
            },
            {"name": "data-monthly", "scope": {"team": "data"}, "amount": 25000},
            {"name": "serving-monthly", "scope": {"team": "serving"}, "amount": 60000},
            {"name": "fleet-quarterly", "scope": {}, "amount": 900000, "period": "quarter"},
        ],
        # rules that fire on the demo fleet: the weekend-idle notebook jupyter-alice
        # (idle_allocation), the XID 79 node (xid_spike, gpu_down); channels: none (the log)
        "alerts": {
            "rules": [
                {"kind": "idle_allocation", "min_hours": 8},
                {"kind": "idle_share", "max_share": 0.25},
                {"kind": "xid_spike", "factor": 3},
                {"kind": "gpu_down", "min_hours": 4},
                {"kind": "spend_anomaly", "min_impact": 500},
                {"kind": "restatement", "min_share": 0.05},
            ]
        },
    }


def generate(
    out: Path,
    *,
    days: int,
    seed: int,
    start: date = DEFAULT_START,
    scrape_interval_s: int = 60,
    aws_nodes: int = 4,
    gcp_nodes: int = 2,
    onprem_nodes: int = 4,
    hpc_job_labels: bool = True,
    mig: bool = False,
    mig_gres: bool = False,
    waste_cases: bool = False,
    dcgm_format: str | dict[str, str] = "prometheus_text",
    progress: Callable[[str, int, int], None] | None = None,
) -> dict:
    """Write a synthetic fleet into `out`; return the ground truth (also in ground_truth.json).

    `dcgm_format` picks the shape of the DCGM files (fleetledger/generator/dcgm_shapes.py), or
    one per provider (`{"aws": "openmetrics", ...}`, others prometheus_text); the samples and
    the ground truth are the same in every shape, the config's DCGM sources follow it."""
    for provider in ("aws", "gcp", "onprem"):
        dcgm_shapes.shape_of(dcgm_format, provider)  # fail before writing anything
    out = Path(out)
    src = out / "sources"
    fleet = build_fleet(
        start=start,
        days=days,
        seed=seed,
        scrape_interval=scrape_interval_s,
        aws_nodes=aws_nodes,
        gcp_nodes=gcp_nodes,
        onprem_nodes=onprem_nodes,
        mig=mig,
        mig_gres=mig_gres,
        waste_cases=waste_cases,
    )
    fleet.hpc_job_labels = hpc_job_labels
    truth = Truth(fleet, IDLE_THRESHOLD, 2 * scrape_interval_s)
    logs = plan_logs(fleet)
    truth.set_checkpoints(last_checkpoints(logs, fleet))
    onprem_series: dict[str, list] = {}
    gcp_series: dict[str, list] = {}
    scrape_lines = 0
    for i, node in enumerate(fleet.nodes):
        if progress:
            progress(f"DCGM samples of {node.host}", i, len(fleet.nodes))
        series = node_series(fleet, node)
        for d in range(days):
            a = fleet.t0 + d * DAY
            day = datetime.fromtimestamp(a, UTC).strftime("%Y-%m-%d")
            shape = dcgm_shapes.shape_of(dcgm_format, node.provider)
            path = dcgm_shapes.node_day_path(src, node, day, shape)
            scrape_lines += dcgm_shapes.write_node_day_shape(fleet, node, series, a, path, shape)
        weighted = []
        for s in series:
            if s.mig_device:  # the slices no MIG instance uses
                used = sum(M.mig_fraction(p) for _, p in node.mig.get(s.gpu, []))
                weighted.append((s, max(0.0, 1.0 - used)))
            else:
                weighted.append((s, s.fraction))
        truth.add_node(node.host, weighted)
        if node.provider == "onprem":
            onprem_series[node.host] = series
        elif node.provider == "gcp":
            gcp_series[node.host] = series
    if progress:
        progress("bills, scheduler logs and power meters", len(fleet.nodes), len(fleet.nodes))
    pue = write_power(fleet, "dc1", onprem_series, src / "onprem" / "power")
    inference_days, inference_hours = write_vllm(fleet, gcp_series, src / "gcp" / "vllm")
    result = truth.finish({("dc1", d): v["pue"] for d, v in pue.items()})
    aws_bill = write_cur(fleet, src / "aws" / "cur" / "fleet-cur")
    gcp_bill = write_gcp(fleet, src / "gcp" / "billing")
    onprem_cost = sum(v for h, v in result["node_cost_by_host"].items() if h.startswith("dgx"))
    write_sacct(fleet, "aws-hpc", src / "aws" / "sacct")
    write_sacct(fleet, "onprem", src / "onprem" / "sacct")
    write_node_events(fleet, src)
    write_pods(fleet, src / "gcp" / "k8s")
    markers = write_logs(logs, src)
    run_costs = {r["run_id"]: float(r["cost"] or 0.0) for r in result["runs"]}
    over_budget = over_budget_amount(fleet, run_costs)
    config = dcgm_shapes.configure(_config(fleet, over_budget), dcgm_format)
    (out / "fleetledger.yml").write_text(yaml.safe_dump(config, sort_keys=False))

    idle_day_cause: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for row in result["idle_by_day_host_cause"]:
        cell = idle_day_cause[(row["day"], row["cause"])]
        cell[0] += row["gpu_hours"]
        cell[1] += row["cost"]
    by_id = {r["run_id"]: r for r in result["runs"]}
    nb = next(r for r in fleet.runs if r.pod_name == "jupyter-alice")
    xr = next(r for r in fleet.runs if r.state == "NODE_FAIL")
    requeued = [r.run_id for r in fleet.runs if r.state == "PREEMPTED"]
    moe = by_id[xr.run_id]
    o = fleet.outages[0]
    st = fleet.stragglers[0]
    ground_truth = {
        "seed": seed,
        "start": start.isoformat(),
        "days": days,
        "scrape_interval_seconds": scrape_interval_s,
        "idle_threshold": IDLE_THRESHOLD,
        "hpc_job_labels": hpc_job_labels,
        "dcgm_format": dcgm_format,
        "mig": mig,
        "mig_gres": mig_gres,
        "waste_cases": waste_cases,
        "dcgm_lines": scrape_lines,
        "nodes": [
            {
                "host": n.host,
                "provider": n.provider,
                "site": n.site,
                "resource_id": n.resource_id,
                "instance_type": n.instance_type,
                "cluster": n.cluster,
                "gpus": n.gpus,
                "gpu_model": n.gpu_model,
                "gpu_uuids": [n.gpu_uuid(g) for g in range(n.gpus)],
            }
            for n in fleet.nodes
        ],
        "checkpoint_markers": markers,
        "bill_totals": {
            "aws": aws_bill,
            "gcp": gcp_bill,
            "onprem": {"billed_cost": onprem_cost, "effective_cost": onprem_cost},
        },
        "gpu_node_cost_by_day_provider": result["gpu_node_cost_by_day_provider"],
        "runs": result["runs"],
        "gpu_days": result["gpu_days"],
        "idle_by_day_host_cause": result["idle_by_day_host_cause"],
        "idle_by_day_cause": [
            {"day": d, "cause": c, "gpu_hours": v[0], "cost": v[1]}
            for (d, c), v in sorted(idle_day_cause.items())
        ],
        "pue": [{"site": "dc1", "day": d, **v} for d, v in sorted(pue.items())],
        "scenarios": {
            "over_budget": {
                "team": OVER_BUDGET_TEAM,
                "budget": f"{OVER_BUDGET_TEAM}-monthly",
                "amount": over_budget,
            },
            "idle_notebook": {
                "run_id": nb.run_id,
                "host": nb.nodes[0],
                "gpus": nb.gpus,
                "start": M.iso(nb.start),  # type: ignore[arg-type]
                "allocated_idle_seconds": by_id[nb.run_id]["allocated_idle_seconds"],
            },
            "xid79_outage": {
                "host": o.host,
                "gpu_index": o.gpu_index,
                "xid": o.xid,
                "start": M.iso(o.start),
                "end": M.iso(o.end),
                "failed_run_id": xr.run_id,
            },
            "requeued_run": {
                "run_ids": requeued
                + [r.run_id for r in fleet.runs if r.attempt == 2 and r.scheduler == "slurm"]
            },
            "checkpointed_failure": {
                "run_id": xr.run_id,
                "last_checkpoint_at": moe["last_checkpoint_at"],
                "ended_at": M.iso(xr.end),  # type: ignore[arg-type]
                "lost_work_seconds": moe["lost_work_seconds"],
                "lost_work_cost": moe["lost_work_cost"],
                "cost": moe["cost"],
            },
            "failures_without_checkpoint": {
                "run_ids": [
                    r.run_id
                    for r in fleet.runs
                    if (r.name == "ppo-sweep-base" and r.state == "PREEMPTED")
                    or r.name == "eval-harness"
                ]
            },
            "straggler": {
                "host": st.host,
                "gpu_index": st.gpu_index,
                "gpu_uuid": fleet.node(st.host).gpu_uuid(st.gpu_index),
                "run_id": st.run_id,
                "start": M.iso(st.start),
                "end": M.iso(st.end),
            },
            # issue 12: the vLLM rolling update (the old pod deleted, the new one on its GPUs
            # from then on) and the evicted embed-batch pod; empty when the window has none
            "rolling_update": [
                {
                    "old_run_id": r.run_id,
                    "new_run_id": new.run_id,
                    "host": r.nodes[0],
                    "at": M.iso(r.end),  # type: ignore[arg-type]
                }
                for r in fleet.runs
                if r.deleted
                for new in fleet.runs
                if new.scheduler == "kubernetes"
                and new.nodes == r.nodes
                and new.start == r.end
                and new.gpu_indices == r.gpu_indices
            ],
            "evicted_pods": [r.run_id for r in fleet.runs if r.pod_reason == "Evicted"],
            # issue 12, item 4: the Slurm job holding a 1g.10gb MIG instance (mig_gres fleets)
            "mig_gres_jobs": [
                r.run_id for r in fleet.runs if r.scheduler == "slurm" and r.mig_profile
            ],
            # issue 16: the right_size_mig and consolidate_replicas cases (waste_cases fleets)
            **waste_truth(fleet),
        },
    }
    # issue 16: per vLLM pod and day, the requests and tokens its metrics count (vllm_files.py)
    ground_truth["inference_days"] = inference_days
    ground_truth["inference_hours"] = inference_hours
    ground_truth.update(health_truth(fleet, truth, result["runs"]))
    (out / "ground_truth.json").write_text(json.dumps(ground_truth, indent=1))
    return ground_truth
