"""The fleet's nodes: AWS p5 instances, GKE a3 nodes, on-prem DGX boxes and the optional
MIG nodes (a GKE one and, with a MIG GRES job, an on-prem one), and when each node's exporter
is scraped. No random draws.
"""

from __future__ import annotations

from collections.abc import Callable

from fleetledger.generator.model import Node, stable_hex


def build_nodes(aws_nodes: int, gcp_nodes: int, onprem_nodes: int) -> list[Node]:
    """The AWS p5 instances (the first two under the Savings Plan), the GKE a3 nodes and the
    on-prem DGX boxes, in that order; each exporter is scraped at its own second of the minute."""
    nodes: list[Node] = []
    for i in range(aws_nodes):
        nodes.append(
            Node(
                host=f"aws-p5-{i + 1:02d}",
                provider="aws",
                site="us-east-2",
                instance_type="p5.48xlarge",
                resource_id=f"i-0{stable_hex('aws', i, n=16)}",
                cluster="aws-hpc",
                sample_offset=(7 * i) % 60,
                savings_plan=i < 2,
            )
        )
    for i in range(gcp_nodes):
        name = f"gke-ml-a3-pool-{stable_hex('gke', i, n=4)}"
        nodes.append(
            Node(
                host=name,
                provider="gcp",
                site="us-central1",
                instance_type="a3-highgpu-8g",
                resource_id=(
                    f"//compute.googleapis.com/projects/fleet-ml-prod/zones/us-central1-a/"
                    f"instances/{int(stable_hex('gce', i, n=12), 16)}"
                ),
                cluster="gke-ml",
                sample_offset=(11 * i + 3) % 60,
            )
        )
    for i in range(onprem_nodes):
        nodes.append(
            Node(
                host=f"dgx-{i + 1:02d}",
                provider="onprem",
                site="dc1",
                instance_type="dgx-h100",
                resource_id=f"dgx-{i + 1:02d}",
                cluster="onprem",
                sample_offset=(13 * i + 5) % 60,
            )
        )
    return nodes


def mig_node(seed: int, index: int) -> Node:
    """The `mig=True` fleet's extra GKE node, the `index`-th node of the fleet: GPUs 0-3 split
    into MIG instances (GPU_I_ID, GPU_I_PROFILE; GPU 3 only the first two), GPUs 4-5
    time-sliced (pods share them), GPUs 6-7 whole."""
    layout = [("1", "3g.40gb"), ("2", "2g.20gb"), ("3", "2g.20gb")]
    return Node(
        host=f"gke-ml-mig-pool-{stable_hex('gke-mig', seed, n=4)}",
        provider="gcp",
        site="us-central1",
        instance_type="a3-highgpu-8g",
        resource_id=(
            "//compute.googleapis.com/projects/fleet-ml-prod/zones/us-central1-a/"
            f"instances/{int(stable_hex('gce-mig', seed, n=12), 16)}"
        ),
        cluster="gke-ml",
        sample_offset=(17 * index + 9) % 60,
        mig={0: layout, 1: layout, 2: layout, 3: layout[:2]},
        time_sliced=(4, 5),
    )


def onprem_mig_node(index: int) -> Node:
    """The `mig_gres=True` fleet's extra on-prem DGX, the `index`-th node of the fleet, in the
    Slurm cluster `onprem`: GPU 0 split into MIG instances 3g.40gb (GPU_I_ID 1), 2g.20gb (2) and
    1g.10gb (3), GPUs 1-7 whole. No background job is placed on it (the fleet adds it after the
    background load): it holds only the MIG GRES job (slurm_runs.mig_gres_run)."""
    return Node(
        host="dgx-mig-01",
        provider="onprem",
        site="dc1",
        instance_type="dgx-h100",
        resource_id="dgx-mig-01",
        cluster="onprem",
        sample_offset=(13 * index + 5) % 60,
        mig={0: [("1", "3g.40gb"), ("2", "2g.20gb"), ("3", "1g.10gb")]},
    )


def hosts(nodes: list[Node], provider: str) -> list[str]:
    """The hosts of one provider (aws | gcp | onprem), in fleet order."""
    return [n.host for n in nodes if n.provider == provider]


def scrape_time_after(node: Node, t: int, *, t0: int, scrape_interval: int) -> int:
    """The first scrape time of `node` at or after `t` (its exporter is scraped every
    `scrape_interval` seconds, `node.sample_offset` seconds after the window's grid)."""
    k = -(-(t - t0 - node.sample_offset) // scrape_interval)
    return t0 + node.sample_offset + k * scrape_interval


def scrape_clock(nodes: list[Node], *, t0: int, scrape_interval: int) -> Callable[[str, int], int]:
    """`scrape_time_after` by host name."""
    by_host = {n.host: n for n in nodes}
    return lambda host, t: scrape_time_after(
        by_host[host], t, t0=t0, scrape_interval=scrape_interval
    )
