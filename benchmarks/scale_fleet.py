"""The scale benchmark's fleet: N GPUs (8 per AWS p5 node), D days, a scrape every S seconds,
J Slurm jobs a day, written into a FLEETLEDGER_HOME in the sources' real formats, fast.

- DCGM: long Parquet (`long_parquet`: `timestamp, hostname, gpu, uuid, metric, value,
  modelName, hpc_job`), one file per node and day, `sources/aws/dcgm/<day>/<host>.parquet`, five
  fields per GPU and scrape (PROF_GR_ENGINE_ACTIVE, GPU_UTIL, POWER_USAGE, FB_USED, SM_CLOCK);
  built column-wise with numpy/polars (a loop per node-day and job, never per sample);
- Slurm: `sacct --parsable2` per day (fleetledger/generator/scheduler_files.py's writer);
- AWS: a CUR 2.0 export (fleetledger/generator/bill_files.py's writer);
- `fleetledger.yml`: the three sources, the inventory, three teams.

What it plants is known in advance (`plan_jobs`, `planted_totals`): job `i` of a day runs on node
`i mod nodes`, in slot `i div nodes` of `ceil(J / nodes)` equal slots of the day, from 1/8 of
the slot for 1/2, 5/8 or 3/4 of it (`i mod 3`), on all 8 GPUs of the node, every boundary on
the scrape grid; every 4th job (`i mod 4 = 3`) idles at 2 % utilisation, the others run at
30 % + 5 % x the GPU index; GPUs no job holds report 0 %. Every GPU reports at every scrape, so
every second is covered: held seconds are busy or allocated-idle as their job, the rest
unallocated, nothing down.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import yaml

from fleetledger.generator.bill_files import write_cur
from fleetledger.generator.model import DAY, Fleet, Node, Run, inventory_entry, stable_hex
from fleetledger.generator.scheduler_files import write_node_events, write_sacct

GPUS_PER_NODE = 8
CLUSTER = "aws-hpc"
IDLE_THRESHOLD = 0.05
IDLE_UTIL = 0.02  # an idle job's utilisation: under the threshold
BUSY_UTIL = 0.30  # a busy job's GPU g runs at BUSY_UTIL + BUSY_STEP x g
BUSY_STEP = 0.05
FIRST_JOB_ID = 500000
#: (Slurm account, team) of job i: ACCOUNTS[i mod 3]
ACCOUNTS = (("llm", "llm-training"), ("research", "research"), ("data", "data"))
METRICS = (
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_POWER_USAGE",
    "DCGM_FI_DEV_FB_USED",
    "DCGM_FI_DEV_SM_CLOCK",
)
MODEL_NAME = "NVIDIA H100 80GB HBM3"
DEFAULT_START = date(2026, 10, 1)

Progress = Callable[[str, int, int], None]


@dataclass(frozen=True)
class ScaleSpec:
    gpus: int
    days: int
    scrape_s: int = 30
    jobs_per_day: int = 0  # 0: two a node
    seed: int = 0
    start: date | None = None
    #: `warehouse: {memory_limit, threads}` of the fleet's config (None: the defaults)
    memory_limit: str | None = None
    threads: int | None = None

    @property
    def nodes(self) -> int:
        return self.gpus // GPUS_PER_NODE

    @property
    def jobs(self) -> int:
        return self.jobs_per_day or 2 * self.nodes

    @property
    def first_day(self) -> date:
        """`start`, else 2026-10-01, or `days + 1` days before today when that is later (a run
        may not account a day in the future)."""
        if self.start is not None:
            return self.start
        latest = datetime.now(UTC).date() - timedelta(days=self.days + 1)
        return min(DEFAULT_START, latest)

    @property
    def last_day(self) -> date:
        return self.first_day + timedelta(days=self.days - 1)

    @property
    def scrapes_per_day(self) -> int:
        return DAY // self.scrape_s

    @property
    def gpu_samples(self) -> int:
        return self.gpus * self.days * self.scrapes_per_day

    @property
    def dcgm_rows(self) -> int:
        return self.gpu_samples * len(METRICS)

    def validate(self) -> None:
        if self.gpus < GPUS_PER_NODE or self.gpus % GPUS_PER_NODE:
            raise ValueError(f"--gpus must be a positive multiple of {GPUS_PER_NODE}")
        if self.days < 1:
            raise ValueError("--days must be at least 1")
        if self.scrape_s < 1 or DAY % self.scrape_s:
            raise ValueError("--scrape-interval must divide a day (86400 s)")
        if self.jobs_per_day < 0:
            raise ValueError("--jobs-per-day must not be negative")
        if slot_seconds(self) < 8 * self.scrape_s:
            raise ValueError("too many jobs a day for the scrape interval (slots too short)")


def hosts(spec: ScaleSpec) -> list[str]:
    return [f"aws-p5-{i + 1:04d}" for i in range(spec.nodes)]


def gpu_uuid(host: str, index: int) -> str:
    h = stable_hex("scale", host, index, n=32)
    return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def slot_seconds(spec: ScaleSpec) -> int:
    """The length of one job slot of a node-day, on the scrape grid."""
    slots = math.ceil(spec.jobs / spec.nodes)
    return (DAY // slots) // spec.scrape_s * spec.scrape_s


def _grid(seconds: float, step: int) -> int:
    return int(seconds) // step * step


def plan_jobs(spec: ScaleSpec) -> pl.DataFrame:
    """One row per job: job_id, day, node, host, account, team, start, end (epoch s), busy."""
    t0 = int(datetime.combine(spec.first_day, datetime.min.time(), UTC).timestamp())
    slot = slot_seconds(spec)
    lead = _grid(slot / 8, spec.scrape_s)
    i = np.arange(spec.jobs)
    rows = []
    for d in range(spec.days):
        length = np.array([_grid(slot * f, spec.scrape_s) for f in (0.5, 0.625, 0.75)])[i % 3]
        start = t0 + d * DAY + (i // spec.nodes) * slot + lead
        rows.append(
            pl.DataFrame(
                {
                    "job_id": FIRST_JOB_ID + d * spec.jobs + i,
                    "day": d,
                    "node": i % spec.nodes,
                    "account_ix": i % 3,
                    "start": start,
                    "end": start + length,
                    "busy": i % 4 != 3,
                }
            )
        )
    jobs = pl.concat(rows)
    names = hosts(spec)
    return jobs.with_columns(
        host=pl.col("node").replace_strict(dict(enumerate(names)), return_dtype=pl.String),
        account=pl.col("account_ix").replace_strict({k: a for k, (a, _) in enumerate(ACCOUNTS)}),
        team=pl.col("account_ix").replace_strict({k: t for k, (_, t) in enumerate(ACCOUNTS)}),
    ).drop("account_ix")


def planted_totals(spec: ScaleSpec) -> dict[str, float]:
    """The fleet's GPU-seconds by state over the whole window, from the plan."""
    jobs = plan_jobs(spec)
    held = jobs.select(
        busy=((pl.col("end") - pl.col("start")) * pl.col("busy")).sum() * GPUS_PER_NODE,
        idle=((pl.col("end") - pl.col("start")) * ~pl.col("busy")).sum() * GPUS_PER_NODE,
    ).row(0, named=True)
    total = spec.gpus * spec.days * DAY
    return {
        "busy_seconds": float(held["busy"]),
        "allocated_idle_seconds": float(held["idle"]),
        "unallocated_seconds": float(total - held["busy"] - held["idle"]),
        "down_seconds": 0.0,
    }


def _fleet(spec: ScaleSpec, jobs: pl.DataFrame) -> Fleet:
    nodes = [
        Node(
            host=h,
            provider="aws",
            site="us-east-2",
            instance_type="p5.48xlarge",
            resource_id=f"i-0{stable_hex('scale', h, n=16)}",
            cluster=CLUSTER,
            savings_plan=n < 2,
        )
        for n, h in enumerate(hosts(spec))
    ]
    runs = [
        Run(
            scheduler="slurm",
            cluster=CLUSTER,
            job_id=str(j["job_id"]),
            job_id_raw=str(j["job_id"]),
            attempt=1,
            team=j["team"],
            user=f"{j['account']}-user",
            account=j["account"],
            queue="batch",
            kind="batch",
            name=f"scale-{j['job_id']}",
            gpus_per_node=GPUS_PER_NODE,
            nodes=[j["host"]],
            gpu_indices={j["host"]: list(range(GPUS_PER_NODE))},
            submitted=j["start"] - 60,
            start=j["start"],
            end=j["end"],
            state="COMPLETED",
        )
        for j in jobs.iter_rows(named=True)
    ]
    return Fleet(
        start_day=spec.first_day,
        days=spec.days,
        seed=spec.seed,
        scrape_interval=spec.scrape_s,
        nodes=nodes,
        runs=runs,
        outages=[],
        gaps=[],
        stragglers=[],
    )


def node_day_frame(spec: ScaleSpec, host: str, day_start: int, jobs: pl.DataFrame) -> pl.DataFrame:
    """The long DCGM rows of one node-day: every GPU at every scrape, five fields each.
    `jobs`: the node's jobs of that day (start, end, busy, job_id)."""
    k = spec.scrapes_per_day
    t = day_start + spec.scrape_s * np.arange(k, dtype=np.int64)
    gpu = np.arange(GPUS_PER_NODE, dtype=np.int32)
    util = np.zeros((k, GPUS_PER_NODE))
    job = np.full(k, -1, dtype=np.int64)
    busy_util = BUSY_UTIL + BUSY_STEP * gpu
    for start, end, busy, job_id in jobs.select("start", "end", "busy", "job_id").iter_rows():
        held = (t >= start) & (t < end)
        util[held] = busy_util if busy else IDLE_UTIL
        job[held] = job_id
    util = util.ravel()  # scrape-major, then GPU
    on = util > 0
    values = np.concatenate(
        [
            util,
            np.round(util * 100),
            np.where(on, 120 + 500 * util, 70.0),
            np.where(on, 40960.0, 0.0),
            np.where(on, 1980.0, 345.0),
        ]
    )
    n = util.size
    uuids = pl.Series([gpu_uuid(host, g) for g in range(GPUS_PER_NODE)], dtype=pl.String)
    gpus = np.tile(gpu, k)
    jobs_per_row = np.repeat(job, GPUS_PER_NODE)
    m = len(METRICS)
    return pl.DataFrame(
        {
            "timestamp": pl.Series(np.tile(np.repeat(t * 1000, GPUS_PER_NODE), m)).cast(
                pl.Datetime("ms", "UTC")
            ),
            "hostname": pl.repeat(host, n * m, eager=True),
            "gpu": np.tile(gpus, m),
            "uuid": uuids.gather(np.tile(gpus, m)),
            "metric": pl.Series(np.repeat(np.array(METRICS), n)),
            "value": values,
            "modelName": pl.repeat(MODEL_NAME, n * m, eager=True),
            "hpc_job": pl.Series(np.tile(jobs_per_row, m)),
        }
    ).with_columns(hpc_job=pl.when(pl.col("hpc_job") >= 0).then(pl.col("hpc_job").cast(pl.String)))


def config(spec: ScaleSpec, fleet: Fleet) -> dict:
    warehouse = {
        k: v
        for k, v in (("memory_limit", spec.memory_limit), ("threads", spec.threads))
        if v is not None
    }
    return {
        **({"warehouse": warehouse} if warehouse else {}),
        "reporting_currency": "USD",
        "idle_threshold": IDLE_THRESHOLD,
        "sources": [
            {"name": "aws-cur", "kind": "aws_cur", "location": "sources/aws/cur/fleet-cur"},
            {
                "name": "aws-slurm",
                "kind": "slurm",
                "location": "sources/aws/sacct/sacct-{date}.txt",
                "options": {"cluster": CLUSTER, "events": "sources/aws/sacct/events.txt"},
            },
            {
                "name": "aws-dcgm",
                "kind": "dcgm",
                "location": "sources/aws/dcgm/{date}/*.parquet",
                "options": {"format": "long_parquet"},
            },
        ],
        "inventory": [inventory_entry(n) for n in fleet.nodes],
        "teams": [
            {"team": team, "owners": [f"{account}-lead"], "match": {"slurm_account": [account]}}
            for account, team in ACCOUNTS
        ],
    }


@dataclass
class Written:
    home: Path
    dcgm_files: list[Path]
    dcgm_rows: int
    gpu_samples: int
    sacct_rows: int
    cur_rows: int
    jobs: int


def write_fleet(spec: ScaleSpec, home: Path, progress: Progress | None = None) -> Written:
    """Write the fleet's sources and fleetledger.yml into `home`. `progress(what, done, total)`
    is called after each node-day of DCGM and each other source."""
    spec.validate()
    say = progress or (lambda _what, _done, _total: None)
    src = home / "sources" / "aws"
    jobs = plan_jobs(spec)
    fleet = _fleet(spec, jobs)
    names = hosts(spec)
    by_node_day = {key: part for key, part in jobs.group_by("node", "day")}
    empty = jobs.clear()
    files: list[Path] = []
    rows = 0
    total = spec.days * spec.nodes
    for d in range(spec.days):
        day_start = fleet.t0 + d * DAY
        day = datetime.fromtimestamp(day_start, UTC).strftime("%Y-%m-%d")
        folder = src / "dcgm" / day
        folder.mkdir(parents=True, exist_ok=True)
        for n, host in enumerate(names):
            frame = node_day_frame(spec, host, day_start, by_node_day.get((n, d), empty))
            path = folder / f"{host}.parquet"
            frame.write_parquet(path, compression="zstd", statistics=False)
            files.append(path)
            rows += frame.height
            say("DCGM long Parquet", d * spec.nodes + n + 1, total)
    write_sacct(fleet, CLUSTER, src / "sacct")
    write_node_events(fleet, home / "sources")
    say("Slurm sacct", 1, 1)
    cur = write_cur(fleet, src / "cur" / "fleet-cur")
    say("AWS CUR", 1, 1)
    (home / "fleetledger.yml").write_text(yaml.safe_dump(config(spec, fleet), sort_keys=False))
    return Written(
        home=home,
        dcgm_files=files,
        dcgm_rows=rows,
        gpu_samples=rows // len(METRICS),
        sacct_rows=sum(
            len(p.read_text().splitlines()) - 1 for p in (src / "sacct").glob("sacct-*.txt")
        ),
        cur_rows=int(cur["lines"]),
        jobs=jobs.height,
    )
