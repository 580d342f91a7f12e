"""vLLM serving metrics → `inference_samples` (kind `inference_metrics`; docs/landing.md).

vLLM's Prometheus metrics are read with the DCGM Prometheus parsers and the vLLM label rules
(ingest/telemetry/vllm_labels.py):

- `prometheus_text` / `openmetrics` (default `prometheus_text`): exposition text, plain or gzip,
  as a scrape or Prometheus' /federate leaves it (samples with timestamps; a sample without one
  takes option `scrape_time`, else the file's mtime);
- `prometheus_range_json`: saved /api/v1/query responses (range selectors: raw samples);
- `prometheus_api` (location = the server's base URL): a live pull, one UTC day at a time in
  chunks, exactly as the live DCGM pull (ingest/telemetry/dcgm_prometheus.py), its checkpoints
  under `<home>/state/inference_prometheus/`. Default metrics: `METRICS` (each histogram's
  `_bucket`, `_sum` and `_count` series).

Plausibility (`check_inference`, after every shape): a sample far from its `{date}` file's day
(± option `day_slack_seconds`, as for DCGM), a negative counter, histogram series or gauge, and
`vllm:kv_cache_usage_perc` (a fraction, despite its name) outside 0–1 go to quarantine with the
reason. A file with no vLLM sample is an `empty_file` warning (a gap in the serving metrics).
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, read_bytes
from ingest.core.errors import IngestError
from ingest.core.findings import IngestFinding
from ingest.core.landing import empty_quarantine
from ingest.core.spec import LandContext
from ingest.telemetry.dcgm import TEXT_FORMATS, _default_time, parse_text, text_lines
from ingest.telemetry.dcgm_checks import DEFAULT_DAY_SLACK_SECONDS, day_window
from ingest.telemetry.dcgm_json import parse_prometheus_json
from ingest.telemetry.dcgm_prometheus import Pull, land_prometheus
from ingest.telemetry.vllm_labels import TABLE, VLLM_SHAPE

COUNTERS = (
    "vllm:prompt_tokens_total",
    "vllm:generation_tokens_total",
    "vllm:request_success_total",
)
HISTOGRAMS = (
    "vllm:time_to_first_token_seconds",
    "vllm:e2e_request_latency_seconds",
    "vllm:request_queue_time_seconds",
)
GAUGES = (
    "vllm:num_requests_running",
    "vllm:num_requests_waiting",
    "vllm:kv_cache_usage_perc",
)
#: every series name the marts read: the counters, each histogram's three series, the gauges
METRICS = (
    *COUNTERS,
    *(f"{h}{s}" for h in HISTOGRAMS for s in ("_bucket", "_sum", "_count")),
    *GAUGES,
)
FILE_FORMATS = (*TEXT_FORMATS, "prometheus_range_json")
KV_CACHE = "vllm:kv_cache_usage_perc"


def _reasons(options: dict[str, Any], day: date | None) -> pl.Expr:
    metric, value = pl.col("metric"), pl.col("value")
    value_text = value.cast(pl.String)
    reason = pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    if day is not None:
        lo, hi = day_window(day, options)
        slack = options.get("day_slack_seconds", DEFAULT_DAY_SLACK_SECONDS)
        reason = reason.when((pl.col("time") < lo) | (pl.col("time") >= hi)).then(
            pl.format(
                "sample time {} is outside the file's day {} (± day_slack_seconds {} s)",
                pl.col("time").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"),
                pl.lit(day.isoformat()),
                pl.lit(str(slack)),
            )
        )
    return (
        reason.when(value.is_nan())
        .then(pl.format("{} = NaN is not a reading", metric))
        .when((metric == KV_CACHE) & ((value < 0) | (value > 1)))
        .then(pl.format("{} = {} is outside the fraction range 0..1", metric, value_text))
        .when(value < 0)
        .then(
            pl.format(
                "{} = {} is negative (counters, histograms and gauges are not)", metric, value_text
            )
        )
        .otherwise(pl.lit(None, pl.String))
    )


def _render() -> pl.Expr:
    """A sample as text, for shapes without lines (API responses)."""
    return pl.format(
        "{} pod={} host={} model_name={} le={} value={} time={}",
        pl.col("metric"),
        pl.col("pod"),
        pl.col("host"),
        pl.col("model_name"),
        pl.col("le"),
        pl.col("value"),
        pl.col("time").dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ"),
    )


def check_inference(
    result: ReadResult,
    *,
    options: dict[str, Any] | None = None,
    day: date | None = None,
    data: bytes | None = None,
) -> ReadResult:
    """`result` with its implausible samples moved to quarantine (module docstring). `data`:
    the text the rows were read from (its lines become the quarantine's `raw`)."""
    rows = result.rows
    if rows.height == 0:
        return result
    checked = rows.with_columns(_reason=_reasons(options or {}, day))
    bad = checked.filter(pl.col("_reason").is_not_null())
    if bad.height == 0:
        return result
    if data is not None:
        bad = bad.join(text_lines(data), on="x_line_number", how="left").with_columns(
            raw=pl.coalesce(pl.col("line"), _render())
        )
    else:
        bad = bad.with_columns(raw=_render())
    quarantine = bad.select(
        "x_source", "x_source_file", "x_line_number", reason=pl.col("_reason"), raw="raw"
    ).cast(dict(empty_quarantine().schema))  # type: ignore[arg-type]
    return ReadResult(
        checked.filter(pl.col("_reason").is_null()).select(rows.columns),
        pl.concat([result.quarantine, quarantine], how="vertical_relaxed").sort(
            "x_source_file", "x_line_number", maintain_order=True
        ),
        sentinels_dropped=result.sentinels_dropped,
        warnings=list(result.warnings),
        files=list(result.files),
    )


def read_inference(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
    day: date | None = None,
) -> ReadResult:
    """Read one file of vLLM metrics in the shape named by option `format` (module docstring).
    `day`: the day of a `{date}` file; its samples far from that day are quarantined."""
    path = Path(path)
    options = options or {}
    fmt = str(options.get("format", "prometheus_text"))
    node_label = options.get("node_label")
    data: bytes | None = None
    if fmt in TEXT_FORMATS:
        data = read_bytes(path)
        result = parse_text(
            data,
            source=source,
            file=str(path),
            default_time=_default_time(path, options),
            node_label=node_label,
            fmt=fmt,
            window=day_window(day, options) if day is not None else None,
            shape=VLLM_SHAPE,
        )
    elif fmt == "prometheus_range_json":
        result = parse_prometheus_json(
            read_bytes(path), source=source, file=str(path), node_label=node_label, shape=VLLM_SHAPE
        )
    else:
        raise IngestError(
            f"inference_metrics format {fmt!r} is not supported (one of "
            f"{', '.join(FILE_FORMATS)}, or prometheus_api with an http(s):// location)",
            file=path,
        )
    result = check_inference(result, options=options, day=day, data=data)
    if result.rows.height == 0 and result.quarantine.height == 0:
        when = f" for {day}" if day is not None else ""
        result.warnings.append(
            IngestFinding(
                "empty_file",
                f"{path}: no vLLM samples in the file{when} (0 bytes, only comments, or no "
                "vllm: metric): a gap in the serving metrics",
                "warning",
                day,
            )
        )
    return result


def _check_chunk(result: ReadResult, *, options: dict[str, Any] | None = None) -> ReadResult:
    return check_inference(result, options=options)


#: the live pull of kind inference_metrics (option `format: prometheus_api`)
VLLM_PULL = Pull(VLLM_SHAPE, METRICS, _check_chunk, "inference_prometheus")


def land_inference_prometheus(ctx: LandContext) -> None:
    """inference_metrics from a live Prometheus: as dcgm's `land_prometheus`, into
    `inference_samples`."""
    land_prometheus(ctx, VLLM_PULL)


__all__ = ["METRICS", "TABLE", "VLLM_PULL", "check_inference", "read_inference"]
