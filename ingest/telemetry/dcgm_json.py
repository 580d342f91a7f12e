"""Prometheus HTTP API responses (JSON) → `dcgm_samples` (format `prometheus_range_json`).

Reads what `/api/v1/query_range` and `/api/v1/query` return:
`{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {...},
"values": [[1727913600.123, "42"], ...]}, ...]}}` (a `vector` result has one `value` per series).
A file holds one response, or several, one per line (as a script that saves a response per
query leaves them). `query_range` values are resampled at its `step` (5-minute lookback), so they
are samples only when the step equals the scrape interval and is aligned to it; raw samples come
from range selectors (`metric[1h]` on /api/v1/query), which is what
ingest/telemetry/dcgm_prometheus.py asks for.

Parsing is vectorised: DuckDB's JSON reader turns the response into lists (series labels kept as
JSON text, values as [time, value] string pairs), polars flattens them; labels are resolved once
per series (ingest/telemetry/dcgm_labels.py). `x_line_number` is the sample's 1-based position
in the file (series by series, in the response's order).
"""

from __future__ import annotations

import threading
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from ingest.core import duckdb_settings
from ingest.core.common import ReadResult, quarantine_from, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, empty_quarantine
from ingest.core.text import decode_text, strict_text
from ingest.telemetry.dcgm_labels import DCGM_SHAPE, json_label_pairs
from ingest.telemetry.series_shape import SeriesShape

_STRUCTURE = '[{"metric": "JSON", "values": "VARCHAR[][]", "value": "VARCHAR[]"}]'
_QUERY = f"""
select
    j ->> '$.status' as status,
    j ->> '$.errorType' as error_type,
    j ->> '$.error' as error,
    j ->> '$.data.resultType' as result_type,
    from_json(j -> '$.data.result', '{_STRUCTURE}') as result
from (select unnest(?::JSON[]) as j)
"""


_local = threading.local()


def _query(docs: list[str]) -> pl.DataFrame:
    # one in-memory DuckDB per thread: opening one costs more than parsing a small response
    con = getattr(_local, "con", None)
    if con is None:
        con = _local.con = duckdb_settings.connect()
    return con.sql(_QUERY, params=[docs]).pl()


def _responses(text: str, file: str) -> pl.DataFrame:
    """One row per response: the whole text as one JSON document, else one per line."""
    try:
        return _query([text])
    except duckdb.Error as err:
        first_error = str(err).splitlines()[0]
    lines = [line for line in text.splitlines() if line.strip()]
    if len(lines) > 1:
        try:
            return _query(lines)
        except duckdb.Error:
            pass
    raise IngestError(f"not a Prometheus API response (JSON): {first_error}", file=file)


def samples_frame(text: str, file: str) -> pl.DataFrame:
    """Every sample of the responses: `sid` (series, in order), `metric_json` (the series'
    labels as JSON text), `t` (seconds, text), `v` (value, text), `x_line_number`."""
    resp = _responses(text, file)
    for i, row in enumerate(resp.select(pl.exclude("result")).iter_rows(named=True)):
        if row["status"] != "success":
            what = f"{row['error_type'] or 'error'}: {row['error'] or 'no error message'}"
            raise IngestError(
                f"Prometheus API response {i + 1} is not a success: {what}", file=file
            )
        if row["result_type"] not in ("matrix", "vector"):
            raise IngestError(
                f"Prometheus API response {i + 1} has resultType {row['result_type']!r} "
                "(expected matrix or vector)",
                file=file,
            )
    series = (
        resp.select(pl.col("result"))
        .explode("result")
        .drop_nulls("result")
        .unnest("result")
        .with_row_index("sid")
    )
    matrix = (
        series.filter(pl.col("values").is_not_null())
        .select("sid", metric_json="metric", p="values")
        .explode("p")
        .drop_nulls("p")
    )
    vector = series.filter(pl.col("values").is_null() & pl.col("value").is_not_null()).select(
        "sid", metric_json="metric", p="value"
    )
    pts = pl.concat([matrix, vector]).sort("sid", maintain_order=True)
    return (
        pts.select(
            "sid",
            "metric_json",
            t=pl.col("p").list.get(0, null_on_oob=True),
            v=pl.col("p").list.get(1, null_on_oob=True),
        )
        .with_row_index("x_line_number", offset=1)
        .with_columns(pl.col("x_line_number").cast(pl.Int64))
    )


def parse_prometheus_json(
    data: bytes | str,
    *,
    source: str,
    file: str,
    node_label: str | None = None,
    window: tuple[datetime, datetime] | None = None,
    shape: SeriesShape = DCGM_SHAPE,
) -> ReadResult:
    """Parse one or more Prometheus API responses already in memory. With `window` = (a, b),
    only samples with a <= time < b are kept (and counted, blank or rejected). `shape`: the
    landing table and its label rules (default DCGM's; vLLM: ingest/telemetry/vllm.py)."""
    # one JSON document: a byte that is not UTF-8 is an error naming the file and line
    text = strict_text(decode_text(data, file), file) if isinstance(data, bytes) else data
    if not text.strip():
        return ReadResult(empty_frame(shape.table), empty_quarantine(), files=[file])
    pts = samples_frame(text, file)
    if pts.height == 0:
        return ReadResult(empty_frame(shape.table), empty_quarantine(), files=[file])
    series = pts.select("sid", "metric_json").unique("sid", keep="first").sort("sid")
    pairs = json_label_pairs(series, "metric_json")
    names = pairs.filter(pl.col("k") == "__name__").select("sid", metric="v")
    resolved = shape.resolve(
        series.select("sid").join(names, on="sid", how="left").with_columns(ok=pl.lit(True)),
        pairs,
        node_label,
    )
    pts = pts.with_columns(
        secs=pl.col("t").cast(pl.Float64, strict=False),
        value=pl.col("v").cast(pl.Float64, strict=False),
    )
    if window is not None:
        lo, hi = (int(w.timestamp() * 1000) for w in window)
        ms = (pl.col("secs") * 1000).round(0)
        pts = pts.filter(pl.col("secs").is_null() | ((ms >= lo) & (ms < hi)))
    rejected: list[pl.DataFrame] = []
    bad_point = pts.filter(pl.col("secs").is_null() | pl.col("value").is_null())
    if bad_point.height:
        rejected.append(
            quarantine_from(
                bad_point.with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file)),
                pl.lit('sample is not [time, "value"] with numbers'),
                pl.concat_str(pl.col("metric_json"), pl.lit(" "), pl.col("t"), pl.lit(" "), "v"),
            )
        )
        pts = pts.filter(pl.col("secs").is_not_null() & pl.col("value").is_not_null())
    blank = shape.blank
    sentinels = pts.select(blank(pl.col("value")).sum()).item() if blank else 0
    if sentinels and blank is not None:
        pts = pts.filter(~blank(pl.col("value")))
    pts = pts.join(resolved, on="sid", how="left", maintain_order="left")
    # series the shape skips (resolved to no metric and no reject reason: vLLM's python_gc_*)
    pts = pts.filter(pl.col("metric").is_not_null() | pl.col("reject").is_not_null())
    bad = pts.filter(pl.col("reject").is_not_null())
    if bad.height:
        rejected.append(
            quarantine_from(
                bad.with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file)),
                pl.col("reject"),
                pl.concat_str(pl.col("metric_json"), pl.lit(" "), pl.col("t"), pl.lit(" "), "v"),
            )
        )
        pts = pts.filter(pl.col("reject").is_null())
    # Prometheus times are milliseconds: round the float seconds to the millisecond
    pts = pts.with_columns(
        time=((pl.col("secs") * 1000).round(0).cast(pl.Int64) * 1000)
        .cast(pl.Datetime("us"))
        .dt.replace_time_zone("UTC")
    )
    rows = shape.finish(pts, source=source, file=file)
    quarantine = pl.concat(rejected).sort("x_line_number") if rejected else empty_quarantine()
    return ReadResult(rows, quarantine, sentinels_dropped=int(sentinels), files=[file])


def read_prometheus_json(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read a saved Prometheus API response file (plain or gzip) into `dcgm_samples` rows.
    Option `node_label` as for the text format."""
    path = Path(path)
    options = options or {}
    return parse_prometheus_json(
        read_bytes(path), source=source, file=str(path), node_label=options.get("node_label")
    )
