"""Series labels → `dcgm_samples` columns: the part every DCGM reader shares.

A reader reduces its input to *series* (one row per distinct label set: `sid`, `metric`, `ok`)
and *pairs* (`sid`, `k`, `v`: every label of every series, values unescaped). `resolve_series`
turns those into the contract's columns, once per series, and says why a series is rejected;
the reader joins the result back to its samples (`finish_rows`).

Label rules (FORMATS.md, "DCGM and Prometheus"):
- host: the label named by option `node_label` (Kubernetes: the exporter pod is `Hostname`, the
  node is in a relabelled label such as `node`), else `Hostname`, else `hostname`;
- `gpu` (index), `UUID`, MIG `GPU_I_ID` / `GPU_I_PROFILE`, `modelName`, `hpc_job`;
- workload: `exported_namespace|namespace|pod_namespace`, `exported_pod|pod|pod_name`,
  `exported_container|container|container_name` (first present wins: after ServiceMonitor
  relabelling `pod`/`namespace` name the exporter itself);
- an empty label value is an absent label (as in Prometheus);
- `labels`: every other label as a JSON object string with sorted keys (null when none), e.g.
  `{"DCGM_FI_DRIVER_VERSION":"550.90.07","err_code":"79","pci_bus_id":"00000000:18:00.0"}`.
"""

from __future__ import annotations

import json

import polars as pl

from ingest.core.landing import polars_schema
from ingest.telemetry.series_shape import SeriesShape

TABLE = "dcgm_samples"

#: DCGM's blank values (dcgm_structs.h: `DCGM_*_BLANK` and the `NOT_FOUND`, `NOT_SUPPORTED`,
#: `NOT_PERMISSIONED` codes just above it), one range per field type; a value in one of them is
#: "no reading", never data. int64: 0x7ffffffffffffff0 and above (float64 cannot tell those 16
#: apart); int32: 0x7ffffff0..0x7fffffff; fp64: 2**47 (140737488355328.0) .. 2**47 + 15.
SENTINEL_MIN = 9223372036854775792
SENTINEL_F = float(SENTINEL_MIN)
INT32_BLANK = 0x7FFFFFF0
FP64_BLANK = 140737488355328.0
#: (class, lowest, highest) of each blank range, inclusive
BLANK_RANGES = (
    ("int32", float(INT32_BLANK), float(INT32_BLANK + 15)),
    ("int64", SENTINEL_F, float("inf")),
    ("fp64", FP64_BLANK, FP64_BLANK + 15),
)

#: labels that fill a column of their own (never repeated in `labels`)
COLUMN_LABELS = (
    "gpu",
    "UUID",
    "GPU_I_ID",
    "GPU_I_PROFILE",
    "modelName",
    "Hostname",
    "hostname",
    "hpc_job",
    "namespace",
    "exported_namespace",
    "pod_namespace",
    "pod",
    "exported_pod",
    "pod_name",
    "container",
    "exported_container",
    "container_name",
)

#: the per-series columns `resolve_series` returns (besides `sid` and `reject`)
SERIES_COLUMNS = (
    "host",
    "gpu",
    "uuid",
    "mig_instance",
    "mig_profile",
    "metric",
    "model_name",
    "hpc_job",
    "namespace",
    "pod",
    "container",
    "labels",
)

_CONTROL = r"[\x00-\x1f]"


def _json_string(v: pl.Expr) -> pl.Expr:
    return v.str.replace_all("\\", "\\\\", literal=True).str.replace_all('"', '\\"', literal=True)


def _labels_json(pairs: pl.DataFrame) -> pl.DataFrame:
    """(sid, labels): the pairs as one JSON object per series, keys sorted."""
    if pairs.height == 0:
        return pl.DataFrame(schema={"sid": pl.UInt32, "labels": pl.String})
    odd = pairs.filter(pl.col("v").str.contains(_CONTROL))
    plain = pairs.filter(~pl.col("v").str.contains(_CONTROL))
    # keys too: a long export's label columns may be named anything
    enc = plain.select(
        "sid",
        "k",
        item=pl.format('"{}":"{}"', _json_string(pl.col("k")), _json_string(pl.col("v"))),
    )
    if odd.height:  # control characters: rare, let json.dumps escape them
        enc = pl.concat(
            [
                enc,
                odd.select(
                    "sid",
                    "k",
                    item=pl.format(
                        '"{}":{}',
                        _json_string(pl.col("k")),
                        pl.col("v").map_elements(json.dumps, return_dtype=pl.String),
                    ),
                ),
            ]
        )
    return (
        enc.sort("sid", "k")
        .group_by("sid", maintain_order=True)
        .agg(pl.col("item").str.join(","))
        .select("sid", labels=pl.concat_str(pl.lit("{"), "item", pl.lit("}")))
    )


def label_columns(
    series: pl.DataFrame, pairs: pl.DataFrame, columns: tuple[str, ...], node_label: str | None
) -> pl.DataFrame:
    """`series` with one column per label of `columns` (and `node_label`; null when a series
    lacks it) and `labels`, the JSON of its other labels. `pairs`: `sid`, `k`, `v` (an empty
    value is no label; several values of one key: the first wins)."""
    wanted = list(dict.fromkeys([*columns, *([node_label] if node_label else [])]))
    pairs = (
        pairs.select(pl.col("sid").cast(pl.UInt32), pl.col("k"), pl.col("v"))
        .filter(pl.col("v") != "")
        .unique(["sid", "k"], keep="first", maintain_order=True)
    )
    cols = pairs.filter(pl.col("k").is_in(wanted))
    other = pairs.filter(~pl.col("k").is_in(wanted) & (pl.col("k") != "__name__"))
    if cols.height:
        labels = cols.pivot(on="k", index="sid", values="v", on_columns=wanted)
    else:
        labels = pl.DataFrame(schema={"sid": pl.UInt32})
    for k in wanted:
        if k not in labels.columns:
            labels = labels.with_columns(pl.lit(None, pl.String).alias(k))
    return (
        series.with_columns(pl.col("sid").cast(pl.UInt32))
        .join(labels, on="sid", how="left")
        .join(_labels_json(other), on="sid", how="left")
    )


def resolve_series(
    series: pl.DataFrame, pairs: pl.DataFrame, node_label: str | None
) -> pl.DataFrame:
    """Per series: the contract's label columns and a reject reason (null when the series
    is good).

    `series`: `sid` (UInt32), `metric` (String), `ok` (Boolean: the name and label set are
    well formed). `pairs`: `sid`, `k`, `v` (unescaped values; several values of one key: the
    first wins)."""
    s = label_columns(series, pairs, COLUMN_LABELS, node_label)

    def first(*names: str) -> pl.Expr:
        return pl.coalesce([pl.col(n) for n in names])

    host = pl.col(node_label) if node_label else first("Hostname", "hostname")
    host_reason = (
        f"no node label {node_label!r} (option node_label)"
        if node_label
        else "no host label (Hostname/hostname)"
    )
    s = s.select(
        "sid",
        "ok",
        host=host,
        gpu_raw=pl.col("gpu"),
        gpu=pl.col("gpu").str.strip_chars().cast(pl.Int32, strict=False),
        uuid=pl.col("UUID"),
        mig_instance=pl.col("GPU_I_ID"),
        mig_profile=pl.col("GPU_I_PROFILE"),
        metric=pl.col("metric"),
        model_name=pl.col("modelName"),
        hpc_job=pl.col("hpc_job"),
        namespace=first("exported_namespace", "namespace", "pod_namespace"),
        pod=first("exported_pod", "pod", "pod_name"),
        container=first("exported_container", "container", "container_name"),
        labels=pl.col("labels"),
    )
    reason = (
        pl.when(~pl.col("ok"))
        .then(pl.lit("malformed metric name or label set"))
        .when(pl.col("metric").is_null() | (pl.col("metric") == ""))
        .then(pl.lit("sample has no metric name"))
        .when(pl.col("gpu_raw").is_null() & pl.col("uuid").is_null())
        .then(pl.lit("sample has no GPU labels (gpu, UUID)"))
        .when(pl.col("gpu_raw").is_not_null() & pl.col("gpu").is_null())
        .then(pl.lit("gpu label is not an integer"))
        .when(pl.col("host").is_null())
        .then(pl.lit(host_reason))
        .otherwise(None)
    )
    return s.with_columns(reject=reason).drop("ok", "gpu_raw").sort("sid")


def is_sentinel(value: pl.Expr) -> pl.Expr:
    """DCGM blank values of any field type (`BLANK_RANGES`: int32, int64, fp64)."""
    return pl.any_horizontal([value.is_between(lo, hi) for _, lo, hi in BLANK_RANGES])


def finish_rows(df: pl.DataFrame, *, source: str, file: str | pl.Expr) -> pl.DataFrame:
    """Good samples in the landing table's shape. `df` carries `time` (Datetime, UTC),
    `value`, `x_line_number` and the `SERIES_COLUMNS`."""
    schema = polars_schema(TABLE)
    x_file = file if isinstance(file, pl.Expr) else pl.lit(file, pl.String)
    return df.select(
        pl.col("time").cast(pl.Datetime("us", "UTC")),
        *SERIES_COLUMNS[:6],
        "value",
        *SERIES_COLUMNS[6:],
        x_source=pl.lit(source, pl.String),
        x_source_file=x_file,
        x_line_number=pl.col("x_line_number").cast(pl.Int64),
    ).cast(dict(schema))  # type: ignore[arg-type]


def json_label_pairs(series: pl.DataFrame, col: str) -> pl.DataFrame:
    """(sid, k, v) from a column of JSON object strings (a long export's `labels`, the
    Prometheus API's `metric` objects)."""
    js = series.select("sid", col).drop_nulls(col).filter(pl.col(col).str.strip_chars() != "")
    empty = pl.DataFrame(schema={"sid": pl.UInt32, "k": pl.String, "v": pl.String})
    if js.height == 0:
        return empty
    decoded = pl.DataFrame(
        {"sid": js["sid"], "d": js[col].str.json_decode(infer_schema_length=None)}
    )
    dtype = decoded.schema["d"]
    if not isinstance(dtype, pl.Struct) or not dtype.fields:
        return empty
    wide = decoded.unnest("d")
    value_cols = [c for c in wide.columns if c != "sid"]
    return (
        wide.with_columns(pl.col(value_cols).cast(pl.String))
        .unpivot(value_cols, index="sid", variable_name="k", value_name="v")
        .drop_nulls("v")
    )


def label_sets(
    df: pl.DataFrame, keys: list[str], index: str = "_sid"
) -> tuple[pl.DataFrame, pl.Series]:
    """The distinct label sets of `df` (its `keys` columns, in first-seen order, numbered in a
    column named `index`) and each row's number. Found by a hash of the keys, then checked
    exactly: every row's keys must equal those of the set it was given. Should two sets ever
    share a hash, the check fails and the sets are found by their values (a file's 115 k rows:
    about 8 ms instead of 16)."""
    k = df.select(keys)
    h = k.hash_rows()
    first = h.is_first_distinct()
    sets = k.filter(first).with_row_index(index)
    lookup = pl.DataFrame({"_h": h.filter(first), index: sets[index]})
    sid = pl.DataFrame({"_h": h}).join(lookup, on="_h", how="left", maintain_order="left")[index]
    given = sets.drop(index)[sid]
    same = k.select(pl.all_horizontal([pl.col(c).eq_missing(given[c]) for c in keys]))
    if same.to_series().all():
        return sets, sid
    sets = k.unique(maintain_order=True).with_row_index(index)
    sid = k.join(sets, on=keys, how="left", nulls_equal=True, maintain_order="left")[index]
    return sets, sid


def resolve_frame(
    df: pl.DataFrame,
    label_cols: list[str],
    node_label: str | None,
    *,
    labels_json: str | None = None,
) -> pl.DataFrame:
    """`resolve_series` for samples whose labels are columns (long exports, nvidia-smi):
    `df` has `metric` and one String column per label, named as the label (`gpu`, `UUID`,
    `Hostname`, ...); `labels_json` names a column of JSON objects holding more labels.
    Returns `df` without those columns, plus the `SERIES_COLUMNS` and `reject`."""
    keys = ["metric", *label_cols, *([labels_json] if labels_json else [])]
    series, sid = label_sets(df, keys, "sid")
    pairs = [
        series.select("sid", *label_cols)
        .unpivot(label_cols, index="sid", variable_name="k", value_name="v")
        .drop_nulls("v")
        if label_cols
        else pl.DataFrame(schema={"sid": pl.UInt32, "k": pl.String, "v": pl.String})
    ]
    if labels_json:
        # a label in its own column wins over the same key inside the JSON object
        pairs.append(json_label_pairs(series, labels_json))
    resolved = resolve_series(
        series.select("sid", "metric", ok=pl.lit(True)),
        pl.concat(pairs, how="vertical_relaxed"),
        node_label,
    )
    out = df.drop(keys).with_columns(sid=sid)
    return out.join(resolved, on="sid", how="left", maintain_order="left").drop("sid")


#: the DCGM readers' shape (ingest/telemetry/series_shape.py): `dcgm_samples`, DCGM blanks dropped
DCGM_SHAPE = SeriesShape(TABLE, resolve_series, finish_rows, is_sentinel)
