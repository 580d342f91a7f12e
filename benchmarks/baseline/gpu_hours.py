"""GPU-hour states and GPU-hours per Slurm job, the way an analyst would write them in pandas.

The reference the scale benchmark times the pipeline against, on the same source files (long
DCGM Parquet, sacct text). It follows docs/metrics.md's rules:

- utilisation: `DCGM_FI_PROF_GR_ENGINE_ACTIVE` when exported, else `DCGM_FI_DEV_GPU_UTIL / 100`;
- each sample covers `[t, min(next sample's t, t + stale_after, window end))`, `stale_after` =
  the config's `stale_after_seconds`, else 2 x the GPU's median interval; cut at hour bounds;
- a Slurm job holds the GPUs whose samples carry its JobIDRaw as `hpc_job`, on its own hosts,
  inside its `[Start, End)` (End `Unknown`: to the window's end), for the whole window;
- held seconds are busy when the covering sample's utilisation is at or above
  `idle_threshold` (or has none), allocated-idle otherwise; held seconds no sample covers are
  busy (and unobserved); covered seconds no job holds are unallocated, and so are uncovered
  ones (no failure signal is modelled).

Scope (it stops with `OutOfScope` otherwise): whole GPUs (no MIG instances), no fatal XID,
no GPU held by two jobs at once, one attempt per job. The benchmark's fleet stays inside it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq

GR_ENGINE = "DCGM_FI_PROF_GR_ENGINE_ACTIVE"
GPU_UTIL = "DCGM_FI_DEV_GPU_UTIL"
XID = "DCGM_FI_DEV_XID_ERRORS"
FATAL_XIDS = (79, 48, 95, 119, 120)
HOUR = 3600
EPOCH = pd.Timestamp(0, tz="UTC")


class OutOfScope(ValueError):
    """The input has something this reference does not model."""


@dataclass
class BaselineResult:
    gpu_hours: pd.DataFrame  # gpu_uuid, hour_epoch, busy/allocated_idle/unallocated/down_seconds
    run_gpu_hours: pd.DataFrame  # run_id, busy_gpu_hours, allocated_idle_gpu_hours
    samples: int  # GPU samples (time x GPU) read


def _seconds(ts: pd.Series) -> pd.Series:
    return (ts - EPOCH).dt.total_seconds()


def load_samples(files: Sequence[Path]) -> pd.DataFrame:
    """One row per GPU and sample time: gpu_uuid, host, t (epoch s), utilization, hpc_job.
    Only the utilisation fields (and XID errors, to refuse fatal ones) are read, strings as
    categoricals: 100 M long rows fit in a few GiB."""
    cols = ["timestamp", "hostname", "uuid", "metric", "value", "hpc_job"]
    table = pq.ParquetDataset(
        [str(f) for f in files], filters=[("metric", "in", [GR_ENGINE, GPU_UTIL, XID])]
    ).read(columns=cols)
    if "GPU_I_ID" in pq.read_schema(files[0]).names:
        raise OutOfScope("MIG instances")
    raw = table.to_pandas(strings_to_categorical=True)
    del table
    xid = raw[(raw["metric"] == XID) & raw["value"].isin(FATAL_XIDS)]
    if len(xid):
        raise OutOfScope(f"{len(xid)} fatal XID samples")
    util = raw[raw["metric"] != XID]
    util = util.assign(t=_seconds(pd.to_datetime(util["timestamp"], utc=True)))
    keys = ["uuid", "hostname", "t"]
    wide = util.groupby([*keys, "metric"], observed=True)["value"].max().unstack("metric")
    for m in (GR_ENGINE, GPU_UTIL):
        if m not in wide.columns:
            wide[m] = np.nan
    wide["utilization"] = wide[GR_ENGINE].fillna(wide[GPU_UTIL] / 100.0)
    jobs = util.dropna(subset=["hpc_job"]).groupby(keys, observed=True)["hpc_job"].first()
    out = wide[["utilization"]].join(jobs).reset_index()
    out.columns.name = None
    return out.rename(columns={"uuid": "gpu_uuid", "hostname": "host"})


def expand_hostlist(nodelist: str) -> list[str]:
    """`aws-p5-[01-03,07],gpu9` → the host names (Slurm's compressed form)."""
    hosts: list[str] = []
    for prefix, ranges, plain in re.findall(r"([^,\[]+)\[([^\]]+)\]|([^,\[\]]+)", nodelist):
        if plain:
            hosts.append(plain)
            continue
        for part in ranges.split(","):
            lo, _, hi = part.partition("-")
            for n in range(int(lo), int(hi or lo) + 1):
                hosts.append(f"{prefix}{n:0{len(lo)}d}")
    return hosts


def load_jobs(files: Sequence[Path], window_end: float) -> pd.DataFrame:
    """Started Slurm allocations, the latest snapshot of each: run_id, job_id_raw, hosts,
    t_from, t_to."""
    frames = []
    for order, f in enumerate(sorted(files)):
        df = pd.read_csv(f, sep="|", dtype=str, keep_default_na=False)
        frames.append(df.assign(_order=order))
    sacct = pd.concat(frames, ignore_index=True)
    sacct = sacct[(sacct["Start"] != "Unknown") & (sacct["State"] != "PENDING")]
    sacct = sacct.sort_values("_order").drop_duplicates("JobIDRaw", keep="last")
    start = pd.to_datetime(sacct["Start"], utc=True)
    end = pd.to_datetime(sacct["End"].replace("Unknown", None), utc=True)
    return pd.DataFrame(
        {
            "run_id": "slurm:" + sacct["Cluster"] + ":" + sacct["JobID"] + ":1",
            "job_id_raw": sacct["JobIDRaw"],
            "hosts": sacct["NodeList"].map(expand_hostlist),
            "t_from": _seconds(start),
            "t_to": _seconds(end).fillna(window_end),
        }
    ).reset_index(drop=True)


def _by_hour(df: pd.DataFrame, lo: str, hi: str) -> pd.DataFrame:
    """Each row of `df` once per hour its [lo, hi) touches: hour_epoch, piece_start/end."""
    first = np.floor(df[lo] / HOUR) * HOUR
    last = np.floor((df[hi] - 1e-9) / HOUR) * HOUR
    n = ((last - first) // HOUR + 1).astype(int).to_numpy()
    out = df.loc[df.index.repeat(n)].copy()
    out["hour_epoch"] = np.repeat(first.to_numpy(), n) + HOUR * out.groupby(level=0).cumcount()
    out["piece_start"] = np.maximum(out[lo], out["hour_epoch"])
    out["piece_end"] = np.minimum(out[hi], out["hour_epoch"] + HOUR)
    return out.reset_index(drop=True)


def gpu_hour_states(
    dcgm_files: Sequence[Path],
    sacct_files: Sequence[Path],
    window_start: float,
    window_end: float,
    idle_threshold: float,
    stale_after_seconds: float | None = None,
) -> BaselineResult:
    """GPU-hour states (every sampled GPU x every hour of [window_start, window_end)) and each
    job's busy / allocated-idle GPU-hours."""
    s = load_samples(dcgm_files).sort_values(["gpu_uuid", "t"], ignore_index=True)
    s["next_t"] = s.groupby("gpu_uuid", observed=True)["t"].shift(-1)
    gaps = s["next_t"] - s["t"]
    median = gaps[gaps > 0].groupby(s["gpu_uuid"], observed=True).median()
    stale = (
        pd.Series(float(stale_after_seconds), index=median.index)
        if stale_after_seconds
        else 2 * median
    )
    s["stale"] = s["gpu_uuid"].map(stale).fillna(0.0)
    s["valid_to"] = np.minimum(
        np.minimum(s["next_t"].fillna(window_end), s["t"] + s["stale"]), window_end
    )
    s["valid_from"] = np.maximum(s["t"], window_start)
    s = s[(s["valid_to"] > s["valid_from"]) & (s["valid_to"] > window_start)]
    pieces = _by_hour(s, "valid_from", "valid_to")
    pieces["seconds"] = pieces["piece_end"] - pieces["piece_start"]
    pieces["is_busy"] = (pieces["utilization"] >= idle_threshold) | pieces["utilization"].isna()

    # which job held which GPU: its hpc_job label, on its hosts, inside its window
    jobs = load_jobs(sacct_files, window_end)
    labels = s.dropna(subset=["hpc_job"])[["gpu_uuid", "host", "t", "hpc_job"]]
    job_hosts = jobs.explode("hosts").rename(columns={"hosts": "host"})
    ev = labels.astype({"hpc_job": str, "host": str}).merge(
        job_hosts, left_on=["hpc_job", "host"], right_on=["job_id_raw", "host"]
    )
    ev = ev[(ev["t"] >= ev["t_from"]) & (ev["t"] < ev["t_to"])]
    held = ev.drop_duplicates(["run_id", "gpu_uuid"])[["run_id", "gpu_uuid", "t_from", "t_to"]]
    held = held.assign(
        t_from=np.maximum(held["t_from"], window_start),
        t_to=np.minimum(held["t_to"], window_end),
    )
    held = held[held["t_to"] > held["t_from"]].sort_values(["gpu_uuid", "t_from"])
    if (held["t_from"] < held.groupby("gpu_uuid", observed=True)["t_to"].shift(1)).any():
        raise OutOfScope("a GPU held by two jobs at once (time-sliced)")
    run_hours = _by_hour(held.reset_index(drop=True), "t_from", "t_to")
    run_hours = run_hours.rename(columns={"piece_start": "hs", "piece_end": "he"})

    ov = run_hours[["run_id", "gpu_uuid", "hour_epoch", "hs", "he"]].merge(
        pieces[["gpu_uuid", "hour_epoch", "piece_start", "piece_end", "is_busy"]],
        on=["gpu_uuid", "hour_epoch"],
    )
    ov["seconds"] = (
        np.minimum(ov["piece_end"], ov["he"]) - np.maximum(ov["piece_start"], ov["hs"])
    ).clip(lower=0)
    ov["busy_cov"] = ov["seconds"].where(ov["is_busy"], 0.0)
    covered = ov.groupby(["run_id", "gpu_uuid", "hour_epoch", "hs"], as_index=False, observed=True)[
        ["seconds", "busy_cov"]
    ].sum()
    rh = run_hours.merge(covered, on=["run_id", "gpu_uuid", "hour_epoch", "hs"], how="left")
    rh[["seconds", "busy_cov"]] = rh[["seconds", "busy_cov"]].fillna(0.0)
    rh["held"] = rh["he"] - rh["hs"]
    rh["unobserved"] = rh["held"] - rh["seconds"]
    rh["busy_seconds"] = rh["busy_cov"] + rh["unobserved"]
    rh["allocated_idle_seconds"] = rh["seconds"] - rh["busy_cov"]

    per_run = rh.groupby("run_id", as_index=False)[["busy_seconds", "allocated_idle_seconds"]].sum()
    per_run["busy_gpu_hours"] = per_run.pop("busy_seconds") / HOUR
    per_run["allocated_idle_gpu_hours"] = per_run.pop("allocated_idle_seconds") / HOUR

    gpu_held = rh.groupby(["gpu_uuid", "hour_epoch"], observed=True)[
        ["busy_seconds", "allocated_idle_seconds", "unobserved"]
    ].sum()
    covered_gpu = pieces.groupby(["gpu_uuid", "hour_epoch"], observed=True)["seconds"].sum()
    hours = np.arange(window_start, window_end, HOUR)
    spine = pd.MultiIndex.from_product(
        [sorted(s["gpu_uuid"].astype(str).unique()), hours], names=["gpu_uuid", "hour_epoch"]
    )
    per_gpu_hour = pd.concat([covered_gpu.rename("covered"), gpu_held], axis=1).reset_index()
    per_gpu_hour["gpu_uuid"] = per_gpu_hour["gpu_uuid"].astype(str)
    g = (
        pd.DataFrame(index=spine)
        .join(per_gpu_hour.set_index(["gpu_uuid", "hour_epoch"]))
        .fillna(0.0)
    )
    held_covered = g["busy_seconds"] - g["unobserved"] + g["allocated_idle_seconds"]
    g["unallocated_seconds"] = g["covered"] - held_covered + (HOUR - g["covered"] - g["unobserved"])
    g["down_seconds"] = 0.0
    gpu_hours = g[
        ["busy_seconds", "allocated_idle_seconds", "unallocated_seconds", "down_seconds"]
    ].reset_index()
    return BaselineResult(gpu_hours=gpu_hours, run_gpu_hours=per_run, samples=len(s))
