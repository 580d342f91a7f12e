"""Write dcgm-exporter scrapes (Prometheus text exposition) for one node and day."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import polars as pl

from fleetledger.generator.fleet import Fleet, Node
from fleetledger.generator.telemetry import GpuSeries

DRIVER = "550.90.07"
MODEL = "NVIDIA H100 80GB HBM3"

# (metric, HELP text, TYPE, GpuSeries attribute)
METRICS: list[tuple[str, str, str, str]] = [
    ("DCGM_FI_DEV_SM_CLOCK", "SM clock frequency (in MHz).", "gauge", "sm_clock_mhz"),
    ("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %).", "gauge", "util_pct"),
    ("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", "gauge", "fb_used_mib"),
    ("DCGM_FI_DEV_POWER_USAGE", "Power draw (in W).", "gauge", "power_w"),
    ("DCGM_FI_DEV_XID_ERRORS", "Value of the last XID error encountered.", "gauge", "xid"),
    (
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "Ratio of time the graphics engine is active.",
        "gauge",
        "util_ratio",
    ),
]


def _fmt(values: np.ndarray, attr: str) -> pl.Series:
    if attr in ("power_w", "util_ratio"):
        return pl.Series(values).cast(pl.Utf8)  # already rounded; shortest round-trip repr
    return pl.Series(values.astype(np.int64)).cast(pl.Utf8)


def scrape_frame(fleet: Fleet, node: Node, series: list[GpuSeries], a: int, b: int) -> pl.DataFrame:
    """Lines of every scrape of the node with a <= t < b, in file order."""
    runs = fleet.runs
    metrics = [m for m in METRICS if m[0] != "DCGM_FI_PROF_GR_ENGINE_ACTIVE" or series[0].has_prof]
    parts: list[pl.DataFrame] = []
    for s in series:
        m = (s.times >= a) & (s.times < b)
        if not m.any():
            continue
        t = s.times[m]
        holder = s.holder[m]
        base = (
            f'gpu="{s.gpu}",UUID="{s.uuid}",pci_bus_id="00000000:{0x18 + 0x10 * s.gpu:02X}:00.0",'
            f'device="nvidia{s.gpu}",modelName="{MODEL}",'
        )
        if node.provider == "gcp":
            base += f'Hostname="nvidia-dcgm-exporter-{node.host[-4:]}",'
        else:
            base += f'Hostname="{node.host}",'
        base += f'DCGM_FI_DRIVER_VERSION="{DRIVER}"'
        # extra labels per holder
        extra = {-1: ""}
        for h in np.unique(holder[holder >= 0]):
            r = runs[int(h)]
            if node.provider == "aws" and fleet.hpc_job_labels:
                extra[int(h)] = f',hpc_job="{r.job_id_raw}"'
            elif node.provider == "gcp":
                extra[int(h)] = (
                    f',container="{r.pod_name.split("-")[0] if r.pod_name else "main"}",'
                    f'namespace="{r.queue}",pod="{r.pod_name}"'
                )
            else:
                extra[int(h)] = ""
        if node.provider == "gcp":
            node_label = f',node="{node.host}"'
        else:
            node_label = ""
        label_of = pl.Series([extra[int(h)] for h in np.unique(holder)])
        keys = pl.Series(np.unique(holder).astype(np.int32))
        labels_df = pl.DataFrame({"holder": keys, "extra": label_of})
        for mi, (name, _, _, attr) in enumerate(metrics):
            df = pl.DataFrame(
                {
                    "t": t,
                    "mi": np.full(t.size, mi, dtype=np.int32),
                    "kind": np.full(t.size, 2, dtype=np.int8),
                    "gpu": np.full(t.size, s.gpu, dtype=np.int32),
                    "holder": holder,
                    "v": _fmt(getattr(s, attr)[m], attr),
                }
            ).join(labels_df, on="holder", how="left")
            df = df.select(
                "t",
                "mi",
                "kind",
                "gpu",
                pl.concat_str(
                    [
                        pl.lit(f"{name}{{{base}"),
                        pl.col("extra"),
                        pl.lit(node_label + "} "),
                        pl.col("v"),
                        pl.lit(" "),
                        (pl.col("t") * 1000).cast(pl.Utf8),
                    ]
                ).alias("line"),
            )
            parts.append(df)
    if not parts:
        return pl.DataFrame({"line": []}, schema={"line": pl.Utf8})
    samples = pl.concat(parts)
    scrapes = samples.select("t").unique()
    heads = []
    for mi, (name, help_, typ, _) in enumerate(metrics):
        heads.append(
            scrapes.with_columns(
                mi=pl.lit(mi, dtype=pl.Int32),
                kind=pl.lit(0, dtype=pl.Int8),
                gpu=pl.lit(-1, dtype=pl.Int32),
                line=pl.lit(f"# HELP {name} {help_}"),
            )
        )
        heads.append(
            scrapes.with_columns(
                mi=pl.lit(mi, dtype=pl.Int32),
                kind=pl.lit(1, dtype=pl.Int8),
                gpu=pl.lit(-1, dtype=pl.Int32),
                line=pl.lit(f"# TYPE {name} {typ}"),
            )
        )
    allf = pl.concat([samples, *[h.select(samples.columns) for h in heads]])
    return allf.sort(["t", "mi", "kind", "gpu"]).select("line")


def write_node_day(
    fleet: Fleet, node: Node, series: list[GpuSeries], day_start: int, path: Path
) -> int:
    df = scrape_frame(fleet, node, series, day_start, day_start + 86400)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "\n".join(df["line"].to_list())
    # mtime=0 and no file name in the header: the same fleet gives byte-identical files
    with open(path, "wb") as raw, gzip.GzipFile("", "wb", 1, raw, mtime=0) as fh:
        fh.write(text.encode())
        fh.write(b"\n")
    return df.height
