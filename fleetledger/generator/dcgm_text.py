"""Write dcgm-exporter scrapes (Prometheus text exposition) for one node and day."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import polars as pl

from fleetledger.generator.model import Fleet, Node
from fleetledger.generator.telemetry import DCGM_BLANK, GpuSeries

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
    # health fields, on the nodes whose counters file enables them (GpuSeries attribute set)
    (
        "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
        "Current clock throttle reasons.",
        "gauge",
        "throttle_reasons",
    ),
    (
        "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "Total number of single-bit volatile ECC errors.",
        "counter",
        "ecc_sbe_total",
    ),
    (
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
        "Total number of double-bit volatile ECC errors.",
        "counter",
        "ecc_dbe_total",
    ),
    (
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for uncorrectable errors",
        "counter",
        "uncorrectable_remapped_rows",
    ),
    (
        "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "Number of remapped rows for correctable errors",
        "counter",
        "correctable_remapped_rows",
    ),
    (
        "DCGM_FI_DEV_ROW_REMAP_FAILURE",
        "Whether remapping of rows has failed",
        "gauge",
        "row_remap_failure",
    ),
]


def _fmt(values: np.ndarray, attr: str) -> pl.Series:
    if attr in ("power_w", "util_ratio"):
        return pl.Series(values).cast(pl.Utf8)  # already rounded; shortest round-trip repr
    return pl.Series(values.astype(np.int64)).cast(pl.Utf8)


def _series_metrics(s: GpuSeries) -> list[int]:
    """Indexes into METRICS of what the exporter reports for this series."""
    names = [m[0] for m in METRICS]
    if s.mig_instance is not None:  # a MIG instance: profiling metrics only
        return [names.index("DCGM_FI_PROF_GR_ENGINE_ACTIVE")]
    prof = s.has_prof and not s.mig_device
    return [
        i
        for i, (name, _, _, attr) in enumerate(METRICS)
        if getattr(s, attr) is not None and (prof or name != "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
    ]


def _holder_labels(fleet: Fleet, node: Node, holders: np.ndarray) -> pl.DataFrame:
    """The labels dcgm-exporter adds for the run holding the GPU (by holder index)."""
    extra = {-1: ""}
    for h in np.unique(holders[holders >= 0]):
        r = fleet.runs[int(h)]
        if node.provider == "aws" and fleet.hpc_job_labels:
            extra[int(h)] = f',hpc_job="{r.job_id_raw}"'
        elif node.provider == "gcp":
            container = r.pod_name.split("-")[0] if r.pod_name else "main"
            extra[int(h)] = f',container="{container}",namespace="{r.queue}",pod="{r.pod_name}"'
        else:
            extra[int(h)] = ""
    return pl.DataFrame(
        {"holder": pl.Series(list(extra), dtype=pl.Int32), "extra": list(extra.values())}
    )


def scrape_frame(fleet: Fleet, node: Node, series: list[GpuSeries], a: int, b: int) -> pl.DataFrame:
    """Lines of every scrape of the node with a <= t < b, in file order.

    A MIG GPU reports its device metrics (GPU_UTIL blank) and one PROF series per instance with
    GPU_I_ID/GPU_I_PROFILE labels; a time-sliced GPU held by two pods repeats each sample once
    per pod, as the exporter's pod mapping does.
    """
    parts: list[pl.DataFrame] = []
    node_label = f',node="{node.host}"' if node.provider == "gcp" else ""
    hostname = f"nvidia-dcgm-exporter-{node.host[-4:]}" if node.provider == "gcp" else node.host
    for s in series:
        m = (s.times >= a) & (s.times < b)
        if not m.any():
            continue
        t = s.times[m]
        base = (
            f'gpu="{s.gpu}",UUID="{s.uuid}",pci_bus_id="00000000:{0x18 + 0x10 * s.gpu:02X}:00.0",'
            f'device="nvidia{s.gpu}",modelName="{MODEL}",'
        )
        if s.mig_instance is not None:
            base += f'GPU_I_PROFILE="{s.mig_profile}",GPU_I_ID="{s.mig_instance}",'
        base += f'Hostname="{hostname}",DCGM_FI_DRIVER_VERSION="{DRIVER}"'
        sub = int(s.mig_instance) if s.mig_instance is not None else 0
        holder_cols = [s.holder[m]]
        if s.holder2 is not None and (s.holder2[m] >= 0).any():
            holder_cols.append(s.holder2[m])
        for dup, holders in enumerate(holder_cols):
            keep = holders >= 0 if dup else np.ones(t.size, dtype=bool)
            labels_df = _holder_labels(fleet, node, holders)
            for mi in _series_metrics(s):
                name, _, _, attr = METRICS[mi]
                values = getattr(s, attr)[m]
                if s.mig_device and attr == "util_pct":
                    values = np.full(t.size, DCGM_BLANK, dtype=np.int64)
                df = pl.DataFrame(
                    {
                        "t": t[keep],
                        "mi": np.full(keep.sum(), mi, dtype=np.int32),
                        "kind": np.full(keep.sum(), 2, dtype=np.int8),
                        "gpu": np.full(keep.sum(), s.gpu, dtype=np.int32),
                        "sub": np.full(keep.sum(), sub * 2 + dup, dtype=np.int32),
                        "holder": holders[keep].astype(np.int32),
                        "v": _fmt(values[keep], attr),
                    }
                ).join(labels_df, on="holder", how="left")
                parts.append(
                    df.select(
                        "t",
                        "mi",
                        "kind",
                        "gpu",
                        "sub",
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
                )
    if not parts:
        return pl.DataFrame({"line": []}, schema={"line": pl.Utf8})
    samples = pl.concat(parts)
    used = samples.select("t", "mi").unique()
    heads = []
    for kind, col in ((0, "help"), (1, "type")):
        text = pl.DataFrame(
            {
                "mi": pl.Series(range(len(METRICS)), dtype=pl.Int32),
                "line": [
                    f"# HELP {n} {h}" if col == "help" else f"# TYPE {n} {ty}"
                    for n, h, ty, _ in METRICS
                ],
            }
        )
        heads.append(
            used.join(text, on="mi").with_columns(
                kind=pl.lit(kind, dtype=pl.Int8),
                gpu=pl.lit(-1, dtype=pl.Int32),
                sub=pl.lit(0, dtype=pl.Int32),
            )
        )
    allf = pl.concat([samples, *[h.select(samples.columns) for h in heads]])
    return allf.sort(["t", "mi", "kind", "gpu", "sub"]).select("line")


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
