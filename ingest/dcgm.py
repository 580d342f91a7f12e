"""dcgm-exporter scrapes in the Prometheus text exposition format (plain or gzip) → `dcgm_samples`.

A sample line is `NAME{label="v",...} VALUE [TIMESTAMP_MS]`. Parsing is vectorised:

1. polars' CSV reader splits every line at the first `}` (name+labels | value+timestamp);
2. the value and timestamp are split and cast column-wise;
3. each distinct `name{labels` string (a series) is parsed once and joined back;
4. lines that do not fit the fast path (no labels, odd spacing, `}` inside a label value)
   are parsed by a full regular expression; what still fails goes to quarantine.

Options (`Source.options`):
- `format`: `prometheus_text` (default; timestamps in ms) or `openmetrics` (timestamps in s).
- `scrape_time`: the time of samples that carry no timestamp (default: the file's mtime).
- `node_label`: take the host from this label (e.g. `node`) instead of `Hostname`/`hostname`;
  on Kubernetes `Hostname` is the exporter pod.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest.common import ReadResult, file_mtime, quarantine_from, to_utc_datetime
from ingest.errors import IngestError
from ingest.landing import empty_quarantine, polars_schema

TABLE = "dcgm_samples"

#: DCGM blank / not-supported sentinels (0x7ffffffffffffff0 and above)
SENTINEL_MIN = 9223372036854775792
_SENTINEL_F = float(SENTINEL_MIN)

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_VALUE = r'"(?:[^"\\]|\\.)*"'
_PAIR = rf"\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*{_VALUE}\s*"
_SERIES_OK = rf"^{_NAME}(\{{(?:{_PAIR}(?:,{_PAIR})*,?)?\s*)?$"
_SLOW_LINE = rf"^\s*({_NAME})\s*(?:\{{(.*)\}})?\s+(\S+)(?:\s+(\S+))?\s*$"

FORMATS = ("prometheus_text", "openmetrics")


_WANTED = (
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


def _series_table(keys: pl.Series, node_label: str | None) -> pl.DataFrame:
    """Parse each distinct series key (`name{k="v",...`) once: metric, labels, reject reason."""
    wanted = list(dict.fromkeys([*_WANTED, *([node_label] if node_label else [])]))
    s = pl.DataFrame({"key": keys}).with_row_index("sid")
    # every `k="v"` pair of every series, long: (sid, k, v)
    pairs = (
        s.select(
            "sid",
            pair=pl.col("key").str.extract_all(rf"[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*{_VALUE}"),
        )
        .explode("pair")
        .drop_nulls("pair")
        .with_columns(pl.col("pair").str.splitn("=", 2).struct.rename_fields(["k", "v"]))
        .unnest("pair")
        .with_columns(
            k=pl.col("k").str.strip_chars(),
            v=pl.col("v").str.strip_chars().str.slice(1).str.head(-1),
        )
        .filter(pl.col("k").is_in(wanted))
        .with_columns(
            v=pl.when(pl.col("v").str.contains("\\", literal=True))
            .then(pl.col("v").str.replace_all(r"\\(.)", "$1"))
            .otherwise(pl.col("v"))
        )
        .filter(pl.col("v") != "")
        .unique(["sid", "k"], keep="first", maintain_order=True)
    )
    labels = pairs.pivot(on="k", index="sid", values="v", on_columns=wanted)
    for k in wanted:
        if k not in labels.columns:
            labels = labels.with_columns(pl.lit(None, pl.String).alias(k))
    s = s.join(labels, on="sid", how="left")

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
        "key",
        metric=pl.col("key").str.extract(rf"^({_NAME})", 1),
        ok=pl.col("key").str.contains(_SERIES_OK),
        host=host,
        gpu_raw=pl.col("gpu"),
        gpu=pl.col("gpu").cast(pl.Int32, strict=False),
        uuid=pl.col("UUID"),
        mig_instance=pl.col("GPU_I_ID"),
        mig_profile=pl.col("GPU_I_PROFILE"),
        model_name=pl.col("modelName"),
        hpc_job=pl.col("hpc_job"),
        # after ServiceMonitor relabelling `pod`/`namespace` name the exporter itself and the
        # workload's labels are the `exported_*` ones
        namespace=first("exported_namespace", "namespace", "pod_namespace"),
        pod=first("exported_pod", "pod", "pod_name"),
        container=first("exported_container", "container", "container_name"),
    )
    reason = (
        pl.when(~pl.col("ok"))
        .then(pl.lit("malformed metric name or label set"))
        .when(pl.col("gpu_raw").is_null() & pl.col("uuid").is_null())
        .then(pl.lit("sample has no GPU labels (gpu, UUID)"))
        .when(pl.col("gpu_raw").is_not_null() & pl.col("gpu").is_null())
        .then(pl.lit("gpu label is not an integer"))
        .when(pl.col("host").is_null())
        .then(pl.lit(host_reason))
        .otherwise(None)
    )
    return s.with_columns(reject=reason).drop("ok", "gpu_raw").sort("sid")


def _read_csv(data: bytes, file: str, **kw: Any) -> pl.DataFrame:
    try:
        return pl.read_csv(data, has_header=False, **kw)
    except (OSError, pl.exceptions.PolarsError) as err:
        if data[:2] == b"\x1f\x8b":
            raise IngestError(f"corrupt or truncated gzip data: {err}", file=file or None) from None
        raise


def _lines(data: bytes) -> pl.DataFrame:
    """Every line of the text, 1-based line numbers; blank lines are null."""
    return _read_csv(
        data,
        "",
        separator="\x1f",
        quote_char=None,
        schema={"line": pl.String},
        missing_columns="insert",
        truncate_ragged_lines=True,
        encoding="utf8-lossy",
        raise_if_empty=False,
        row_index_name="x_line_number",
        row_index_offset=1,
    )


def _default_time(path: Path, options: dict[str, Any]) -> datetime:
    if options.get("scrape_time") is not None:
        return to_utc_datetime(options["scrape_time"], "scrape_time")
    return file_mtime(path)


def parse_text(
    data: bytes,
    *,
    source: str,
    file: str,
    default_time: datetime,
    node_label: str | None = None,
    fmt: str = "prometheus_text",
) -> ReadResult:
    """Parse exposition text already in memory, plain or gzip-compressed (see
    `read_dcgm_text` for a file)."""
    if fmt not in FORMATS:
        raise IngestError(f"dcgm format {fmt!r} is not supported yet", file=file)
    schema = polars_schema(TABLE)
    if not data or data.isspace():
        return ReadResult(pl.DataFrame(schema=schema), empty_quarantine(), files=[file])

    # 1. split at the first `}`: `name{labels` | ` value [ts]`. The left part is read as a
    #    categorical, so each distinct series string is hashed once, inside the CSV reader.
    df = _read_csv(
        data,
        file,
        separator="}",
        quote_char=None,
        schema={"s": pl.Categorical, "r": pl.String},
        missing_columns="insert",
        truncate_ragged_lines=True,
        encoding="utf8-lossy",
        raise_if_empty=False,
        row_index_name="x_line_number",
        row_index_offset=1,
    ).filter(pl.col("s").is_not_null())
    keys = (
        df.select(code=pl.col("s").to_physical(), key=pl.col("s"))
        .unique("code")
        .with_columns(pl.col("key").cast(pl.String))
    )
    comments = keys.filter(pl.col("key").str.starts_with("#"))
    keys = keys.filter(~pl.col("key").str.starts_with("#"))
    df = df.select("x_line_number", "r", code=pl.col("s").to_physical())
    if comments.height:
        df = df.filter(~pl.col("code").is_in(comments.get_column("code").implode()))

    # 2. value and timestamp: " VALUE[ TS]" splits into "", VALUE, TS
    df = df.with_columns(
        pl.col("r").str.split_exact(" ", 2).struct.rename_fields(["lead", "v", "t"]),
        r_len=pl.col("r").str.len_bytes(),
    ).unnest("r")
    ts_dtype = pl.Int64 if fmt == "prometheus_text" else pl.Float64
    df = df.with_columns(
        value=pl.col("v").cast(pl.Float64, strict=False),
        ts_raw=pl.col("t").cast(ts_dtype, strict=False),
    )
    # a fourth field (or a null `lead`: no `}` on the line) sends the line to the slow path
    fast = (
        (pl.col("lead") == "")
        & pl.col("value").is_not_null()
        & (pl.col("t").is_null() | pl.col("ts_raw").is_not_null())
        & (
            pl.col("r_len")
            == pl.col("v").str.len_bytes() + 1 + (pl.col("t").str.len_bytes() + 1).fill_null(0)
        )
    ).fill_null(False)
    df = df.with_columns(fast=fast)
    good = df.filter(pl.col("fast")).select("x_line_number", "code", "value", "ts_raw")
    slow = df.filter(~pl.col("fast")).select("x_line_number")

    rejected: list[pl.DataFrame] = []
    lines: pl.DataFrame | None = None
    good_slow: pl.DataFrame | None = None
    if slow.height:
        # 4. the full regex on the original lines of the rows that missed the fast path
        lines = _lines(data)
        sl = slow.join(lines, on="x_line_number", how="left")
        # indented comments and whitespace-only lines are not samples
        sl = sl.filter(~pl.col("line").str.contains(r"^\s*(#.*)?$"))
        g = pl.col("line").str.extract_groups(_SLOW_LINE)
        sl = sl.with_columns(g=g).with_columns(
            name=pl.col("g").struct.field("1"),
            inner=pl.col("g").struct.field("2"),
            value=pl.col("g").struct.field("3").cast(pl.Float64, strict=False),
            t=pl.col("g").struct.field("4"),
        )
        sl = sl.with_columns(ts_raw=pl.col("t").cast(ts_dtype, strict=False))
        sl_ok = (
            pl.col("name").is_not_null()
            & pl.col("value").is_not_null()
            & (pl.col("t").is_null() | pl.col("ts_raw").is_not_null())
        )
        good_slow = sl.filter(sl_ok).select(
            "x_line_number",
            key=pl.when(pl.col("inner").is_null())
            .then(pl.col("name"))
            .otherwise(pl.concat_str("name", pl.lit("{"), "inner")),
            value="value",
            ts_raw="ts_raw",
        )
        bad = sl.filter(~sl_ok)
        if good.height == 0 and good_slow.height == 0 and bad.height:
            first = bad.row(0, named=True)
            snippet = (first["line"] or "")[:120]
            raise IngestError(
                f"not Prometheus text exposition: cannot parse {snippet!r}",
                file=file,
                line=first["x_line_number"],
            )
        if bad.height:
            rejected.append(
                bad.select(
                    pl.lit(source).alias("x_source"),
                    pl.lit(file).alias("x_source_file"),
                    "x_line_number",
                    pl.lit("unparseable sample line").alias("reason"),
                    pl.col("line").alias("raw"),
                )
            )

    # drop DCGM blank sentinels
    sentinels = 0
    is_sentinel = pl.col("value") >= _SENTINEL_F
    parts = [good] if good_slow is None else [good, good_slow]
    for i, part in enumerate(parts):
        n = part.select(is_sentinel.sum()).item() if part.height else 0
        if n:
            parts[i] = part.filter(~is_sentinel)
            sentinels += n

    # 3. parse each series once, join back (fast rows by categorical code, slow ones by key)
    series = _series_table(keys.get_column("key"), node_label).drop("sid")
    by_code = keys.join(series, on="key", how="left").drop("key")
    good = parts[0].join(by_code, on="code", how="left", maintain_order="left").drop("code")
    if good_slow is not None:
        slow_series = _series_table(parts[1].get_column("key").unique(), node_label).drop("sid")
        good_slow = parts[1].join(slow_series, on="key", how="left", maintain_order="left")
        good = pl.concat([good, good_slow.drop("key")], how="vertical_relaxed").sort(
            "x_line_number"
        )
    if good.select(pl.col("reject").is_not_null().any()).item():
        if lines is None:
            lines = _lines(data)
        bad_series = (
            good.filter(pl.col("reject").is_not_null())
            .join(lines, on="x_line_number", how="left")
            .with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file))
        )
        rejected.append(quarantine_from(bad_series, pl.col("reject"), pl.col("line")))
        good = good.filter(pl.col("reject").is_null())

    default_us = int(default_time.timestamp() * 1_000_000)
    if fmt == "prometheus_text":
        ts_us = pl.col("ts_raw") * 1000
    else:
        ts_us = (pl.col("ts_raw") * 1_000_000).round(0).cast(pl.Int64)
    rows = good.select(
        time=ts_us.fill_null(default_us).cast(pl.Datetime("us")).dt.replace_time_zone("UTC"),
        host="host",
        gpu="gpu",
        uuid="uuid",
        mig_instance="mig_instance",
        mig_profile="mig_profile",
        metric="metric",
        value="value",
        model_name="model_name",
        hpc_job="hpc_job",
        namespace="namespace",
        pod="pod",
        container="container",
        x_source=pl.lit(source, pl.String),
        x_source_file=pl.lit(file, pl.String),
        x_line_number=pl.col("x_line_number").cast(pl.Int64),
    ).cast(dict(schema))  # type: ignore[arg-type]
    quarantine = (
        pl.concat([q.cast(dict(empty_quarantine().schema)) for q in rejected]).sort("x_line_number")  # type: ignore[arg-type]
        if rejected
        else empty_quarantine()
    )
    return ReadResult(rows, quarantine, sentinels_dropped=int(sentinels), files=[file])


def read_dcgm_text(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
) -> ReadResult:
    """Read one dcgm-exporter scrape file (plain or gzip) into `dcgm_samples` rows.

    Returns the samples (blank sentinels dropped and counted in `sentinels_dropped`) and a
    quarantine frame of lines that are not valid samples or lack GPU/host labels. Raises
    `IngestError` when the file cannot be read or no line of it parses. Gzip files are handed
    to polars compressed (its decompressor is faster than Python's zlib).
    """
    path = Path(path)
    options = options or {}
    try:
        data = path.read_bytes()
    except OSError as err:
        raise IngestError(f"cannot read file: {err.strerror or err}", file=path) from None
    return parse_text(
        data,
        source=source,
        file=str(path),
        default_time=_default_time(path, options),
        node_label=options.get("node_label"),
        fmt=options.get("format", "prometheus_text"),
    )
