"""The generator's DCGM samples in every shape fleetledger reads (`generate(dcgm_format=…)`).

Each shape is written from the very lines `dcgm_text.scrape_frame` produces for a node and day,
so every shape carries the same samples (and the ground truth does not change with the shape):

- `prometheus_text`: dcgm-exporter scrapes, `<host>.prom.gz` (dcgm_text.py, unchanged);
- `openmetrics`: `<host>.om.gz`, metric families one after the other, each series' samples in
  time order, timestamps in seconds, `# EOF` last (what `promtool tsdb create-blocks-from
  openmetrics` reads);
- `prometheus_range_json`: `<host>.json.gz`, one /api/v1/query response (`resultType: matrix`)
  holding every series of the node for the day, as `{__name__=~"DCGM_.*"}[1d]` returns it;
- `long_csv` / `long_parquet`: `<host>.csv.gz` / `<host>.parquet`, one row per sample:
  `timestamp, hostname, gpu, uuid, metric, value` and every other label in a column of its own;
- `nvidia_smi_csv`: `<host>.csv.gz`, `nvidia-smi --query-gpu=timestamp,name,pci.bus_id,index,
  uuid,utilization.gpu,memory.used,power.draw,clocks.sm --format=csv -l N` as the node would log
  it: no job, pod or MIG instance rows and no profiling metric; a GPU that fell off the bus
  (XID 79) shows `[GPU is lost]`, a MIG-mode GPU's utilisation `[N/A]`.
"""

from __future__ import annotations

import gzip
import io
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import polars as pl

from fleetledger.generator.dcgm_text import METRICS, scrape_frame, write_node_day
from fleetledger.generator.model import Fleet, Node
from fleetledger.generator.telemetry import DCGM_BLANK, GpuSeries

SHAPES = (
    "prometheus_text",
    "openmetrics",
    "prometheus_range_json",
    "long_csv",
    "long_parquet",
    "nvidia_smi_csv",
)
EXTENSIONS = {
    "prometheus_text": ".prom.gz",
    "openmetrics": ".om.gz",
    "prometheus_range_json": ".json.gz",
    "long_csv": ".csv.gz",
    "long_parquet": ".parquet",
    "nvidia_smi_csv": ".csv.gz",
}
#: nvidia-smi query fields and the DCGM metric each one shows, with its unit
NVSMI_FIELDS = (
    ("utilization.gpu", "%", "DCGM_FI_DEV_GPU_UTIL"),
    ("memory.used", "MiB", "DCGM_FI_DEV_FB_USED"),
    ("power.draw", "W", "DCGM_FI_DEV_POWER_USAGE"),
    ("clocks.sm", "MHz", "DCGM_FI_DEV_SM_CLOCK"),
)
_PAIR = r'([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"'


def samples(lines: pl.DataFrame) -> pl.DataFrame:
    """The sample lines of a scrape frame as columns: `t_ms`, `name`, `inner` (the label set
    as written), `value` (text, as written); `sid` numbers the distinct (name, inner) series."""
    # the generator's lines are regular (no `{`, `}` or `"` inside label values): split them
    df = (
        lines.filter(~pl.col("line").str.starts_with("#"))
        .select(a=pl.col("line").str.splitn("{", 2))
        .unnest("a")
        .select(
            name=pl.col("field_0"),
            b=pl.col("field_1").str.splitn("} ", 2),
        )
        .unnest("b")
        .select(
            "name",
            inner=pl.col("field_0"),
            c=pl.col("field_1").str.split_exact(" ", 1),
        )
        .unnest("c")
        .select(
            "name",
            "inner",
            value=pl.col("field_0"),
            t_ms=pl.col("field_1").cast(pl.Int64, strict=False),
        )
    )
    if df.select(pl.any_horizontal(pl.all().is_null()).any()).item():
        raise ValueError("scrape_frame wrote a line the shape writer does not understand")
    series = df.select("name", "inner").unique(maintain_order=True).with_row_index("sid")
    return df.join(series, on=["name", "inner"], how="left", maintain_order="left")


def label_pairs(df: pl.DataFrame) -> pl.DataFrame:
    """(sid, k, v, pos) for every label of every series, in written order."""
    series = df.select("sid", "inner").unique("sid", maintain_order=True)
    return (
        series.select("sid", p=pl.col("inner").str.extract_all(_PAIR))
        .explode("p")
        .drop_nulls("p")
        .with_columns(pos=pl.int_range(pl.len()).over("sid"))
        .select(
            "sid",
            "pos",
            k=pl.col("p").str.extract(_PAIR, 1),
            v=pl.col("p").str.extract(_PAIR, 2),
        )
    )


def _gz(text: str, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    # mtime=0 and no file name in the header: the same fleet gives byte-identical files
    with open(path, "wb") as raw, gzip.GzipFile("", "wb", 1, raw, mtime=0) as fh:
        fh.write(text.encode())


def openmetrics_text(df: pl.DataFrame) -> str:
    """OpenMetrics text of the samples: families in METRICS order, series sorted by labels,
    samples in time order, timestamps in seconds, `# EOF` last."""
    order = {name: i for i, (name, *_) in enumerate(METRICS)}
    out = io.StringIO()
    df = df.with_columns(
        fam=pl.col("name").replace_strict(order, default=len(order), return_dtype=pl.Int32)
    ).sort("fam", "name", "inner", "t_ms")
    df = df.with_columns(
        line=pl.concat_str(
            "name",
            pl.lit("{"),
            "inner",
            pl.lit("} "),
            "value",
            pl.lit(" "),
            (pl.col("t_ms") // 1000).cast(pl.String),
        )
    )
    helps = {name: (help_, typ) for name, help_, typ, _ in METRICS}
    for name, part in df.group_by("name", maintain_order=True):
        metric = str(name[0])
        help_, typ = helps.get(metric, ("", "gauge"))
        out.write(f"# HELP {metric} {help_}\n# TYPE {metric} {typ}\n")
        out.write("\n".join(part["line"].to_list()))
        out.write("\n")
    out.write("# EOF\n")
    return out.getvalue()


def range_json_text(df: pl.DataFrame) -> str:
    """One /api/v1/query response (matrix) holding every series of the samples."""
    pairs = label_pairs(df)
    metric_json = (
        pairs.sort("sid", "pos")
        .group_by("sid", maintain_order=True)
        .agg(pl.format('"{}":"{}"', "k", "v").str.join(","))
        .rename({"k": "labels"})
    )
    series = (
        df.sort("sid", "t_ms")
        .group_by("sid", maintain_order=True)
        .agg(
            pl.first("name"),
            pl.format(
                '[{},"{}"]',
                (pl.col("t_ms") // 1000).cast(pl.String),
                "value",
            )
            .str.join(",")
            .alias("values"),
        )
        .join(metric_json, on="sid", how="left")
        .sort("sid")
    )
    items = series.select(
        pl.concat_str(
            pl.lit('{"metric":{"__name__":"'),
            "name",
            pl.lit('",'),
            "labels",
            pl.lit('},"values":['),
            "values",
            pl.lit("]}"),
        )
    ).to_series()
    return (
        '{"status":"success","data":{"resultType":"matrix","result":['
        + ",\n".join(items.to_list())
        + "]}}\n"
    )


def long_frame(df: pl.DataFrame) -> pl.DataFrame:
    """One row per sample: timestamp, hostname, gpu, uuid, metric, value, then each other
    label as a column (null where a series does not carry it)."""
    pairs = label_pairs(df)
    order = (
        pairs.group_by("k").agg(pl.col("pos").min(), pl.col("sid").min()).sort("pos", "sid")["k"]
    )
    wide = pairs.pivot(on="k", index="sid", values="v", on_columns=order.to_list())
    rename = {"Hostname": "hostname", "UUID": "uuid"}
    wide = wide.rename({k: v for k, v in rename.items() if k in wide.columns})
    rows = df.join(wide, on="sid", how="left", maintain_order="left").sort("t_ms", "sid")
    first = ["timestamp", "hostname", "gpu", "uuid", "metric", "value"]
    rows = rows.with_columns(
        timestamp=pl.col("t_ms").cast(pl.Datetime("ms")).dt.replace_time_zone("UTC"),
        metric=pl.col("name"),
    )
    others = [c for c in wide.columns if c not in ("sid", *first)]
    return rows.select(*first, *others)


def nvidia_smi_text(df: pl.DataFrame) -> str:
    """The node's nvidia-smi CSV log: a row per poll and physical GPU."""
    pairs = label_pairs(df)
    ident = pairs.filter(pl.col("k").is_in(["gpu", "UUID", "pci_bus_id", "modelName", "GPU_I_ID"]))
    wide = ident.pivot(
        on="k",
        index="sid",
        values="v",
        on_columns=["gpu", "UUID", "pci_bus_id", "modelName", "GPU_I_ID"],
    )
    s = df.join(wide, on="sid", how="left").filter(pl.col("GPU_I_ID").is_null())
    # hpc_job / pod duplicates of one sample collapse to one value
    s = s.unique(["t_ms", "gpu", "name"], keep="first").with_columns(
        gpu=pl.col("gpu").cast(pl.Int32)
    )
    lost = s.filter(
        (pl.col("name") == "DCGM_FI_DEV_XID_ERRORS") & (pl.col("value") == "79")
    ).select("t_ms", "gpu", lost=pl.lit(True))
    polls = s.select("t_ms", "gpu", "UUID", "pci_bus_id", "modelName").unique(["t_ms", "gpu"])
    polls = polls.join(lost, on=["t_ms", "gpu"], how="left").sort("t_ms", "gpu")
    fields = []
    for field, unit, metric in NVSMI_FIELDS:
        vals = s.filter(pl.col("name") == metric).select(
            "t_ms", "gpu", pl.col("value").alias(field)
        )
        polls = polls.join(vals, on=["t_ms", "gpu"], how="left", maintain_order="left")
        text = (
            pl.when(pl.col("lost").fill_null(False))
            .then(pl.lit("[GPU is lost]"))
            .when(pl.col(field).is_null() | (pl.col(field) == str(DCGM_BLANK)))
            .then(pl.lit("[N/A]"))
            .otherwise(pl.concat_str(pl.col(field), pl.lit(f" {unit}")))
        )
        fields.append(text.alias(field))
    stamp = pl.col("t_ms").cast(pl.Datetime("ms")).dt.strftime("%Y/%m/%d %H:%M:%S%.3f")
    rows = polls.select(
        pl.concat_str(
            stamp,
            "modelName",
            "pci_bus_id",
            pl.col("gpu").cast(pl.String),
            "UUID",
            *fields,
            separator=", ",
        )
    ).to_series()
    header = "timestamp, name, pci.bus_id, index, uuid, " + ", ".join(
        f"{f} [{u}]" for f, u, _ in NVSMI_FIELDS
    )
    return header + "\n" + "\n".join(rows.to_list()) + "\n"


def node_day_path(root: Path, node: Node, day: str, fmt: str) -> Path:
    return root / node.provider / "dcgm" / day / f"{node.host}{EXTENSIONS[fmt]}"


def write_shapes(lines: pl.DataFrame, targets: Mapping[str, Path]) -> None:
    """Write the samples of one node-day's scrape lines (`dcgm_text.scrape_frame`) in each
    shape of `targets` (shape → path)."""
    df = samples(lines) if any(f != "prometheus_text" for f in targets) else None
    for fmt, path in targets.items():
        if fmt not in SHAPES:
            raise ValueError(f"unknown dcgm_format {fmt!r} (one of {', '.join(SHAPES)})")
        path.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "prometheus_text":
            _gz("\n".join(lines["line"].to_list()) + "\n", path)  # as dcgm_text writes it
            continue
        assert df is not None
        if fmt == "openmetrics":
            _gz(openmetrics_text(df), path)
        elif fmt == "prometheus_range_json":
            _gz(range_json_text(df), path)
        elif fmt == "long_csv":
            buf = io.BytesIO()
            long_frame(df).with_columns(
                pl.col("timestamp").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")
            ).write_csv(buf)
            _gz(buf.getvalue().decode(), path)
        elif fmt == "long_parquet":
            long_frame(df).with_columns(
                pl.col("gpu").cast(pl.Int32), pl.col("value").cast(pl.Float64)
            ).write_parquet(path, compression="zstd")
        else:
            _gz(nvidia_smi_text(df), path)


def write_node_day_shape(
    fleet: Fleet, node: Node, series: list[GpuSeries], day_start: int, path: Path, fmt: str
) -> int:
    """Write one node-day of DCGM samples in shape `fmt`; returns the number of lines the
    dcgm-exporter text of the same samples has (the ground truth's `dcgm_lines`)."""
    if fmt not in SHAPES:
        raise ValueError(f"unknown dcgm_format {fmt!r} (one of {', '.join(SHAPES)})")
    if fmt == "prometheus_text":
        return write_node_day(fleet, node, series, day_start, path)
    lines = scrape_frame(fleet, node, series, day_start, day_start + 86400)
    write_shapes(lines, {fmt: path})
    return lines.height


def shape_of(fmt: str | Mapping[str, str], provider: str) -> str:
    """The shape of a provider's DCGM files: `fmt`, or `fmt[provider]` (default
    prometheus_text) when it is a mapping."""
    shape = fmt if isinstance(fmt, str) else fmt.get(provider, "prometheus_text")
    if shape not in SHAPES:
        raise ValueError(f"unknown dcgm_format {shape!r} (one of {', '.join(SHAPES)})")
    return shape


def configure(config: dict[str, Any], fmt: str | Mapping[str, str]) -> dict[str, Any]:
    """Point the config's DCGM sources (`sources/<provider>/dcgm/{date}/…`) at the files of
    their shape (in place; returned)."""
    for src in config["sources"]:
        if src["kind"] != "dcgm":
            continue
        folder = src["location"].rsplit("/", 1)[0]
        provider = folder.split("/")[1]
        shape = shape_of(fmt, provider)
        src["location"] = f"{folder}/*{EXTENSIONS[shape]}"
        options = dict(src.get("options") or {})
        options["format"] = shape
        if shape == "nvidia_smi_csv":
            options.pop("node_label", None)  # nvidia-smi runs on the node: its file name
        src["options"] = options
    return config
