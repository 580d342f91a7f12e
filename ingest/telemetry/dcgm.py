"""dcgm-exporter scrapes in the Prometheus text exposition format (plain or gzip) → `dcgm_samples`,
(`read_dcgm`, the entry point for every DCGM file shape, is in dcgm_formats.py).

A sample line is `NAME{label="v",...} VALUE [TIMESTAMP]`. Parsing is vectorised:

1. polars' CSV reader splits every line at the first `}` (name+labels | value+timestamp), the
   left part read as a categorical, so each distinct series string is hashed once, in Rust;
2. the value and timestamp are split and cast column-wise;
3. each distinct `name{labels` string (a series) is parsed once
   (ingest/telemetry/dcgm_labels.py) and joined back by its categorical code;
4. lines that do not fit the fast path (no labels, odd spacing, `}` inside a label value)
   are parsed by a full regular expression; what still fails goes to quarantine.

Options (`Source.options`):
- `format`: `prometheus_text` (default; timestamps in ms) or `openmetrics` (timestamps in s);
  the other shapes are read by their own modules (see `ingest.telemetry.dcgm_formats.read_dcgm`).
- `scrape_time`: the time of samples that carry no timestamp (default: the file's mtime).
- `node_label`: take the host from this label (e.g. `node`) instead of `Hostname`/`hostname`;
  on Kubernetes `Hostname` is the exporter pod.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, file_mtime, quarantine_from, to_utc_datetime
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, empty_quarantine
from ingest.core.text import blank_invalid_lines
from ingest.telemetry.dcgm_labels import DCGM_SHAPE, SENTINEL_MIN, TABLE
from ingest.telemetry.series_shape import SeriesShape

__all__ = ["FORMATS", "SENTINEL_MIN", "TABLE", "parse_text", "read_dcgm_text"]

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_VALUE = r'"(?:[^"\\]|\\.)*"'
_PAIR = rf"\s*[a-zA-Z_][a-zA-Z0-9_]*\s*=\s*{_VALUE}\s*"
_SERIES_OK = rf"^{_NAME}(\{{(?:{_PAIR}(?:,{_PAIR})*,?)?\s*)?$"
_SLOW_LINE = rf"^\s*({_NAME})\s*(?:\{{(.*)\}})?\s+(\S+)(?:\s+(\S+))?\s*$"

TEXT_FORMATS = ("prometheus_text", "openmetrics")
#: every file shape `read_dcgm` reads (`prometheus_api` is a live server: ingest/dcgm_prometheus)
FORMATS = (
    *TEXT_FORMATS,
    "prometheus_range_json",
    "long_csv",
    "long_parquet",
    "nvidia_smi_csv",
)


def _unescape(v: pl.Expr) -> pl.Expr:
    """Prometheus label value escapes: `\\\\`, `\\"`, `\\n`."""
    return (
        pl.when(v.str.contains("\\", literal=True))
        .then(
            v.str.replace_all("\\\\", "\x00", literal=True)
            .str.replace_all("\\n", "\n", literal=True)
            .str.replace_all(r"\\(.)", "$1")
            .str.replace_all("\x00", "\\", literal=True)
        )
        .otherwise(v)
    )


def _series_table(
    keys: pl.Series, node_label: str | None, shape: SeriesShape = DCGM_SHAPE
) -> pl.DataFrame:
    """Parse each distinct series key (`name{k="v",...`) once: metric, labels, reject reason."""
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
            v=_unescape(pl.col("v").str.strip_chars().str.slice(1).str.head(-1)),
        )
    )
    series = s.select(
        "sid",
        metric=pl.col("key").str.extract(rf"^({_NAME})", 1),
        ok=pl.col("key").str.contains(_SERIES_OK),
    )
    resolved = shape.resolve(series, pairs, node_label)
    return s.select("sid", "key").join(resolved, on="sid", how="left")


def _read_csv(data: bytes, file: str, **kw: Any) -> pl.DataFrame:
    try:
        return pl.read_csv(data, has_header=False, **kw)
    except (OSError, pl.exceptions.PolarsError) as err:
        if "utf-8" in str(err).lower():
            raise IngestError(f"not UTF-8 text: {err}".splitlines()[0], file=file or None) from None
        if data[:2] == b"\x1f\x8b":
            raise IngestError(f"corrupt or truncated gzip data: {err}", file=file or None) from None
        raise


def _lines_csv(data: bytes, file: str, separator: str, schema: dict[str, Any]) -> pl.DataFrame:
    """The text's lines split at `separator` into the `schema` columns (ragged lines padded),
    with 1-based `x_line_number`."""
    return _read_csv(
        data,
        file,
        separator=separator,
        quote_char=None,
        schema=schema,
        missing_columns="insert",
        truncate_ragged_lines=True,
        encoding="utf8-lossy",
        raise_if_empty=False,
        row_index_name="x_line_number",
        row_index_offset=1,
    )


def _split_lines(data: bytes, file: str) -> pl.DataFrame:
    """Each line split at its first `}`: `s` = `name{labels` (categorical), `r` = the rest."""
    return _lines_csv(data, file, "}", {"s": pl.Categorical, "r": pl.String}).filter(
        pl.col("s").is_not_null()
    )


def text_lines(data: bytes) -> pl.DataFrame:
    """Every line of the text (plain or gzip bytes) as column `line`, with 1-based
    `x_line_number`; blank lines are null. Shared by the text readers (DCGM, KSM, nvidia-smi)."""
    return _lines_csv(data, "", "\x1f", {"line": pl.String})


def _default_time(path: Path, options: dict[str, Any]) -> datetime:
    if options.get("scrape_time") is not None:
        return to_utc_datetime(options["scrape_time"], "scrape_time")
    return file_mtime(path)


def _slow_path(
    data: bytes, slow: pl.DataFrame, ts_dtype: pl.DataType, source: str, file: str
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Lines that missed the fast path, by the full regular expression: (good rows with a
    `key`, rejected lines as quarantine, every line of the file)."""
    lines = text_lines(data)
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
    good = sl.filter(sl_ok).select(
        "x_line_number",
        key=pl.when(pl.col("inner").is_null())
        .then(pl.col("name"))
        .otherwise(pl.concat_str("name", pl.lit("{"), "inner")),
        value="value",
        ts_raw="ts_raw",
    )
    bad = sl.filter(~sl_ok).select(
        pl.lit(source).alias("x_source"),
        pl.lit(file).alias("x_source_file"),
        "x_line_number",
        pl.lit("unparseable sample line").alias("reason"),
        pl.col("line").alias("raw"),
    )
    return good, bad, lines


def parse_text(
    data: bytes,
    *,
    source: str,
    file: str,
    default_time: datetime,
    node_label: str | None = None,
    fmt: str = "prometheus_text",
    window: tuple[datetime, datetime] | None = None,
    shape: SeriesShape = DCGM_SHAPE,
) -> ReadResult:
    """Parse exposition text already in memory, plain or gzip-compressed (see
    `read_dcgm_text` for a file). `window` = [a, b): the times the file's day allows; when
    `default_time` is outside it, the samples without a timestamp are quarantined. `shape`:
    the landing table and its label rules (default DCGM's; vLLM: ingest/telemetry/vllm.py)."""
    if fmt not in TEXT_FORMATS:
        raise IngestError(f"dcgm format {fmt!r} is not a text exposition format", file=file)
    if not data or data.isspace():
        return ReadResult(empty_frame(shape.table), empty_quarantine(), files=[file])
    # lines with bytes that are not UTF-8 are emptied here and quarantined below; a plain text
    # is checked at once (one decode), a gzip one only when polars refuses it
    invalid: pl.DataFrame | None = None
    if data[:2] != b"\x1f\x8b":
        data, invalid = blank_invalid_lines(data)

    # 1. split at the first `}`: `name{labels` | ` value [ts]`
    try:
        df = _split_lines(data, file)
    except IngestError as err:
        if "utf-8" not in str(err).lower():
            raise
        data, invalid = blank_invalid_lines(data)
        df = _split_lines(data, file)
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
    ts_dtype: pl.DataType = pl.Int64() if fmt == "prometheus_text" else pl.Float64()
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
        good_slow, bad, lines = _slow_path(data, slow, ts_dtype, source, file)
        if good.height == 0 and good_slow.height == 0 and bad.height:
            snippet = (bad.item(0, "raw") or "")[:120]
            raise IngestError(
                f"not Prometheus text exposition: cannot parse {snippet!r}",
                file=file,
                line=bad.item(0, "x_line_number"),
            )
        if bad.height:
            rejected.append(bad)

    # drop blank values (DCGM's sentinels)
    sentinels = 0
    parts = [good] if good_slow is None else [good, good_slow]
    blank = shape.blank
    for i, part in enumerate(parts):
        n = part.select(blank(pl.col("value")).sum()).item() if part.height and blank else 0
        if n and blank is not None:
            parts[i] = part.filter(~blank(pl.col("value")))
            sentinels += n

    # 3. parse each series once, join back (fast rows by categorical code, slow ones by key)
    series = _series_table(keys.get_column("key"), node_label, shape).drop("sid")
    by_code = keys.join(series, on="key", how="left").drop("key")
    good = parts[0].join(by_code, on="code", how="left", maintain_order="left").drop("code")
    if good_slow is not None:
        slow_keys = parts[1].get_column("key").unique()
        slow_series = _series_table(slow_keys, node_label, shape).drop("sid")
        good_slow = parts[1].join(slow_series, on="key", how="left", maintain_order="left")
        good = pl.concat([good, good_slow.drop("key")], how="vertical_relaxed").sort(
            "x_line_number"
        )
    # series the shape skips (resolved to no metric and no reject reason: vLLM's python_gc_*)
    good = good.filter(pl.col("metric").is_not_null() | pl.col("reject").is_not_null())
    if good.select(pl.col("reject").is_not_null().any()).item():
        if lines is None:
            lines = text_lines(data)
        bad_series = (
            good.filter(pl.col("reject").is_not_null())
            .join(lines, on="x_line_number", how="left")
            .with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file))
        )
        rejected.append(quarantine_from(bad_series, pl.col("reject"), pl.col("line")))
        good = good.filter(pl.col("reject").is_null())

    if window is not None and not (window[0] <= default_time < window[1]):
        untimed = good.filter(pl.col("ts_raw").is_null())
        if untimed.height:
            if lines is None:
                lines = text_lines(data)
            reason = (
                f"sample has no timestamp and the file's time {default_time.isoformat()} "
                "(option scrape_time, else the file's mtime) is outside the file's day "
                f"({window[0].isoformat()} .. {window[1].isoformat()})"
            )
            rejected.append(
                quarantine_from(
                    untimed.join(lines, on="x_line_number", how="left").with_columns(
                        x_source=pl.lit(source), x_source_file=pl.lit(file)
                    ),
                    pl.lit(reason),
                    pl.col("line"),
                )
            )
            good = good.filter(pl.col("ts_raw").is_not_null())
    default_us = int(default_time.timestamp() * 1_000_000)
    if fmt == "prometheus_text":
        ts_us = pl.col("ts_raw") * 1000
    else:
        ts_us = (pl.col("ts_raw") * 1_000_000).round(0).cast(pl.Int64)
    good = good.with_columns(
        time=ts_us.fill_null(default_us).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
    )
    rows = shape.finish(good, source=source, file=file)
    if invalid is not None:
        rejected.append(
            invalid.select(
                pl.lit(source).alias("x_source"), pl.lit(file).alias("x_source_file"), pl.all()
            )
        )
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
    window: tuple[datetime, datetime] | None = None,
) -> ReadResult:
    """Read one dcgm-exporter scrape file (plain or gzip) into `dcgm_samples` rows (`window`:
    as for `parse_text`).

    Returns the samples (blank sentinels dropped and counted in `sentinels_dropped`) and a
    quarantine frame of lines that are not valid samples or lack GPU/host labels. Raises
    `IngestError` when the file cannot be read or no line of it parses. Gzip files are handed
    to polars compressed (its decompressor is faster than Python's zlib).
    """
    path = Path(path)
    options = options or {}
    fmt = options.get("format", "prometheus_text")
    if fmt not in TEXT_FORMATS:
        raise IngestError(f"dcgm format {fmt!r} is not a text exposition format", file=path)
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
        fmt=fmt,
        window=window,
    )
