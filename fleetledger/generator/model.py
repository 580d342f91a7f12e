"""The synthetic fleet's data model: nodes, GPUs, runs and incidents, and the rate card.

Everything here is the generator's *truth* about what happened; `fleet.build_fleet` lays a fleet
out from a seed, the writers turn it into source files in their real formats and `truth.py`
derives what the pipeline must find. Times are integer seconds since the Unix epoch (UTC).
"""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field
from datetime import UTC, date, datetime

HOUR = 3600
DAY = 86400

# AWS p5.48xlarge on-demand, us-east-2; the Savings Plan rate is the 1-year compute SP rate.
P5_ON_DEMAND_PER_HOUR = 98.32
P5_SAVINGS_PLAN_PER_HOUR = 55.04
SAVINGS_PLAN_COMMITMENT_PER_HOUR = 115.00  # covers two instances, a little over-committed
# GCP a3-highgpu-8g, us-central1: GPU, core and RAM SKUs per instance-hour, and a CUD credit.
A3_GPU_PER_HOUR = 88.49
A3_CORE_PER_HOUR = 5.00
A3_RAM_PER_HOUR = 2.31
A3_CUD_CREDIT_PER_HOUR = -30.97
# On-prem DGX H100 rate card.
DGX_CAPEX = 400_000.0
DGX_AMORTISATION_MONTHS = 48
POWER_PRICE_PER_KWH = 0.12
HOST_OVERHEAD_W = 2000.0
SITE_OTHER_IT_KW = 3.0

FATAL_XIDS = (79, 48, 95, 119, 120)
XID_ROW_REMAP = 63  # "row remap recorded": not fatal, the GPU keeps working

# Clock throttle / event reasons (DCGM_FI_DEV_CLOCK_THROTTLE_REASONS bits, FORMATS.md)
THROTTLE_IDLE = 0x1  # not throttling: the GPU has nothing to do
SW_POWER_CAP = 0x4
HW_SLOWDOWN = 0x8
SW_THERMAL = 0x20
HW_THERMAL = 0x40
HW_POWER_BRAKE = 0x80
#: the throttling reasons, by the name the fleet-health mart gives their column
THROTTLING_REASONS = {
    "sw_power_cap": SW_POWER_CAP,
    "hw_slowdown": HW_SLOWDOWN,
    "sw_thermal": SW_THERMAL,
    "hw_thermal": HW_THERMAL,
    "hw_power_brake": HW_POWER_BRAKE,
}
#: below this utilisation the GPU reports the idle reason (0x1)
THROTTLE_IDLE_UTIL = 0.05
# Which health fields each site's dcgm-exporter counters file enables: AWS runs a lean custom
# file plus DCGM_FI_DEV_CLOCK_THROTTLE_REASONS; on-prem a custom file with the volatile ECC
# counters (single-bit: the trend that precedes a failing HBM; double-bit: each one also surfaces
# as XID 48 and an uncorrectable remapped row) and the row-remapping fields of the default file;
# GKE's managed exporter reports none of them. Each field is a line per GPU and scrape: few, to
# keep files small.
THROTTLE = "throttle"  # DCGM_FI_DEV_CLOCK_THROTTLE_REASONS
ECC_SBE = "ecc_sbe"  # DCGM_FI_DEV_ECC_SBE_VOL_TOTAL
ECC_DBE = "ecc_dbe"  # DCGM_FI_DEV_ECC_DBE_VOL_TOTAL
ROW_REMAP = "row_remap"  # DCGM_FI_DEV_(UN)CORRECTABLE_REMAPPED_ROWS, DCGM_FI_DEV_ROW_REMAP_FAILURE
HEALTH_FIELDS: dict[str, tuple[str, ...]] = {
    "aws": (THROTTLE,),
    "gcp": (),
    "onprem": (ECC_SBE, ECC_DBE, ROW_REMAP),
}


def epoch(d: date) -> int:
    return int(datetime(d.year, d.month, d.day, tzinfo=UTC).timestamp())


def iso(t: int) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def stable_hex(*parts: object, n: int = 8) -> str:
    return hashlib.sha256("/".join(map(str, parts)).encode()).hexdigest()[:n]


def stable_uuid(*parts: object) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, "/".join(map(str, parts))))


@dataclass
class Node:
    host: str
    provider: str  # aws | gcp | onprem
    site: str
    instance_type: str
    resource_id: str
    cluster: str
    gpus: int = 8
    gpu_model: str = "H100"
    sample_offset: int = 0  # seconds after the minute when this node's exporter is scraped
    savings_plan: bool = False
    # MIG layout: GPU index -> [(GPU_I_ID, GPU_I_PROFILE)]; time-sliced GPU indices
    mig: dict[int, list[tuple[str, str]]] = field(default_factory=dict)
    time_sliced: tuple[int, ...] = ()

    @property
    def health_fields(self) -> tuple[str, ...]:
        """The health field groups (THROTTLE, ECC_SBE, ECC_DBE, ROW_REMAP) its exporter reports."""
        return HEALTH_FIELDS[self.provider]

    def gpu_uuid(self, index: int) -> str:
        h = stable_hex(self.host, index, n=32)
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


@dataclass
class Run:
    """One scheduler run: a Slurm allocation attempt or a Kubernetes pod."""

    scheduler: str  # slurm | kubernetes
    cluster: str
    job_id: str  # as the scheduler prints it (300_4, 210, pod uid)
    job_id_raw: str  # Slurm JobIDRaw / pod uid
    attempt: int
    team: str
    user: str
    account: str  # Slurm account or K8s namespace
    queue: str  # Slurm partition or K8s namespace
    kind: str  # training | inference | interactive | batch
    name: str
    gpus_per_node: int
    nodes: list[str]
    gpu_indices: dict[str, list[int]]  # host -> indices held
    submitted: int
    start: int | None  # None while pending
    end: int | None  # None while running at the end of the window
    state: str  # final state (COMPLETED, FAILED, NODE_FAIL, PREEMPTED, ...)
    exit_code: int = 0
    util_mean: float = 0.8
    util_profile: str = "steady"  # steady | diurnal | idle | hang_then_fail
    array_job_id: str | None = None
    array_task: int | None = None
    pod_name: str | None = None
    mig_instance: str | None = None  # GPU_I_ID of the MIG instance the pod holds
    mig_profile: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # Kubernetes: the pod's own status.reason (`Evicted`, `NodeLost`); `deleted`: the pod object
    # was deleted at `end` while it ran (a rolling update), so no dump from then on shows it
    pod_reason: str | None = None
    deleted: bool = False
    # the waste cases (waste_runs.py): the DCGM memory range its GPUs report while it holds them
    # (MiB, [low, high); None: the fleet's usual 38-78 GB), a load test (from, to, utilisation),
    # the model a vLLM server serves (None: vllm_files.MODEL_NAME), and whether its samples
    # draw from a stream of its own (telemetry.py: the GPU's stream is as without it)
    memory_mib: tuple[int, int] | None = None
    load_test: tuple[int, int, float] | None = None
    served_model: str | None = None
    own_stream: bool = False

    @property
    def run_id(self) -> str:
        return f"{self.scheduler}:{self.cluster}:{self.job_id}:{self.attempt}"

    @property
    def gpus(self) -> int:
        return self.gpus_per_node * len(self.nodes)

    @property
    def gpu_equivalents(self) -> float:
        """Whole GPUs, or a MIG instance's compute slices / 7."""
        if self.mig_profile:
            return mig_fraction(self.mig_profile)
        return float(self.gpus)


def mig_fraction(profile: str) -> float:
    """Compute slices of a MIG profile (`3g.40gb` -> 3) over the 7 of an H100/A100."""
    return int(profile.split("g", 1)[0]) / 7.0


@dataclass
class Outage:
    """A node that fell off the bus (XID 79 on one GPU) and came back after a reboot."""

    host: str
    gpu_index: int
    xid: int
    start: int  # a scrape time of the node: the sample that reports the XID
    end: int  # first scrape time after the reboot


@dataclass
class ScrapeGap:
    """The exporter on a node did not answer for a while (no samples, GPUs still fine)."""

    host: str
    start: int
    end: int


@dataclass
class Straggler:
    host: str
    gpu_index: int
    run_id: str
    start: int
    end: int
    util_factor: float = 0.6
    sm_clock_mhz: int = 1260


@dataclass
class Throttle:
    """Clock throttling of some GPUs of a node: `reasons` bits set in every sample taken in
    [start, end). A SW power cap also caps board power and the SM clock of busy GPUs."""

    host: str
    gpu_indices: tuple[int, ...]
    start: int
    end: int
    reasons: int
    power_cap_w: float | None = None
    sm_clock_mhz: int | None = None


@dataclass
class EccErrors:
    """`count` volatile ECC errors (`kind` sbe | dbe) on one GPU at time `at`. The volatile
    counters restart at 0 when the driver reloads (the reboot after an outage of the node);
    errors before the window are already in the first sample's counter."""

    host: str
    gpu_index: int
    at: int
    count: int
    kind: str = "sbe"


@dataclass
class RowRemap:
    """A DRAM row remapped on one GPU, recorded at scrape time `at`: the persistent remapped-rows
    counter goes up and the XID gauge reports 63 ("row remap recorded") from then until the
    driver reloads. Not fatal: the GPU keeps working."""

    host: str
    gpu_index: int
    at: int
    correctable: int = 1
    uncorrectable: int = 0
    failure: bool = False  # remapping failed: DCGM_FI_DEV_ROW_REMAP_FAILURE = 1 from `at` on


@dataclass
class GpuFault:
    """A fatal XID on one GPU that no run holds (a double-bit ECC error: XID 48), cleared by an
    operator's GPU reset. The XID gauge reads `xid` from the scrape at `at` (the sample that
    reports it) until the reset; from the first sample after `reset_at` it reads 0 again and the
    GPU's volatile ECC counters restart at 0 (the reset reloads that GPU, not the node's driver).
    `uncorrectable_rows` rows are remapped (the persistent counter goes up at `at`; the remap
    takes effect at the reset). The GPU is `down` from `at` to its first sample after the reset
    (DESIGN.md: after a fatal XID the GPU is down until it reports normally again)."""

    host: str
    gpu_index: int
    xid: int
    at: int  # a scrape time of the node
    reset_at: int  # not a scrape time: the first sample after it reports normally
    uncorrectable_rows: int = 1


@dataclass
class Fleet:
    start_day: date
    days: int
    seed: int
    scrape_interval: int
    nodes: list[Node]
    runs: list[Run]
    outages: list[Outage]
    gaps: list[ScrapeGap]
    stragglers: list[Straggler]
    hpc_job_labels: bool = True  # does the AWS site's DCGM exporter add `hpc_job` labels?
    throttles: list[Throttle] = field(default_factory=list)
    ecc_errors: list[EccErrors] = field(default_factory=list)
    row_remaps: list[RowRemap] = field(default_factory=list)
    gpu_faults: list[GpuFault] = field(default_factory=list)

    @property
    def t0(self) -> int:
        return epoch(self.start_day)

    @property
    def t1(self) -> int:
        return self.t0 + self.days * DAY

    def node(self, host: str) -> Node:
        return next(n for n in self.nodes if n.host == host)


def inventory_entry(n: Node) -> dict[str, object]:
    """The node as an `inventory:` entry of fleetledger.yml."""
    return {
        "host": n.host,
        "resource_id": n.resource_id,
        "provider": n.provider,
        "site": n.site,
        "instance_type": n.instance_type,
        "gpus": n.gpus,
        "gpu_model": n.gpu_model,
        "cluster": n.cluster,
    }
