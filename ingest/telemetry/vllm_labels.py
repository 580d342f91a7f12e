"""Series labels → `inference_samples` columns: the vLLM metrics' `SeriesShape`
(ingest/telemetry/series_shape.py), so that the DCGM Prometheus text and API parsers read vLLM
metrics too.

Label rules (docs/landing.md, "inference_samples"):
- only `vllm:` metrics land (a scrape of vLLM's /metrics also holds the Python client's
  `python_gc_*` / `process_*` series: those are skipped, not rejected);
- host: the label named by option `node_label`, else `Hostname`, `hostname`, `node`;
- workload: `exported_namespace|namespace|pod_namespace`, `exported_pod|pod|pod_name`,
  `exported_container|container|container_name` (first present wins, as for DCGM);
- `model_name`, `finished_reason` (vllm:request_success_total) and a bucket's `le`, written
  back canonically (`+Inf`, else the bound as a decimal number: `le="1"` and `le="1.0"` are
  one bucket);
- `labels`: every other label (`job`, `instance`, `engine`, ...) as a JSON object string.

A series is rejected (quarantined with the reason) when it is malformed, has no metric name,
can be tied to no server (neither a pod nor a host label), or is a `_bucket` series without a
numeric `le`.
"""

from __future__ import annotations

import polars as pl

from ingest.core.landing import polars_schema
from ingest.telemetry.dcgm_labels import label_columns
from ingest.telemetry.series_shape import SeriesShape

TABLE = "inference_samples"
PREFIX = "vllm:"

#: labels that fill a column of their own (never repeated in `labels`)
COLUMN_LABELS = (
    "Hostname",
    "hostname",
    "node",
    "namespace",
    "exported_namespace",
    "pod_namespace",
    "pod",
    "exported_pod",
    "pod_name",
    "container",
    "exported_container",
    "container_name",
    "model_name",
    "finished_reason",
    "le",
)

#: the per-series columns `resolve_series` returns (besides `sid` and `reject`)
SERIES_COLUMNS = (
    "host",
    "namespace",
    "pod",
    "container",
    "model_name",
    "metric",
    "le",
    "finished_reason",
    "labels",
)


def canonical_le(le: pl.Expr) -> pl.Expr:
    """A bucket bound as one text per number: `+Inf` for +Inf / Inf / inf, else the float's
    shortest decimal form (`1` and `1.0` → `1.0`); null when it is not a number."""
    text = le.str.strip_chars()
    number = text.cast(pl.Float64, strict=False)
    return (
        pl.when(text.str.to_lowercase().is_in(["+inf", "inf"]))
        .then(pl.lit("+Inf"))
        .when(number.is_finite())
        .then(number.cast(pl.String))
        .otherwise(pl.lit(None, pl.String))
    )


def resolve_series(
    series: pl.DataFrame, pairs: pl.DataFrame, node_label: str | None
) -> pl.DataFrame:
    """Per series: the contract's label columns, `keep` (a `vllm:` metric) and a reject
    reason (null when the series is good). Inputs as for dcgm_labels.resolve_series."""
    s = label_columns(series, pairs, COLUMN_LABELS, node_label)

    def first(*names: str) -> pl.Expr:
        return pl.coalesce([pl.col(n) for n in names])

    host = pl.col(node_label) if node_label else first("Hostname", "hostname", "node")
    s = s.select(
        "sid",
        "ok",
        host=host,
        namespace=first("exported_namespace", "namespace", "pod_namespace"),
        pod=first("exported_pod", "pod", "pod_name"),
        container=first("exported_container", "container", "container_name"),
        model_name=pl.col("model_name"),
        metric=pl.col("metric"),
        le_raw=pl.col("le"),
        le=canonical_le(pl.col("le")),
        finished_reason=pl.col("finished_reason"),
        labels=pl.col("labels"),
    )
    metric = pl.col("metric")
    reason = (
        pl.when(~pl.col("ok"))
        .then(pl.lit("malformed metric name or label set"))
        .when(metric.is_null() | (metric == ""))
        .then(pl.lit("sample has no metric name"))
        .when(pl.col("pod").is_null() & pl.col("host").is_null())
        .then(
            pl.lit(
                "sample has neither a pod nor a host label: it cannot be tied to a run "
                "(pod/namespace labels, or option node_label)"
            )
        )
        .when(metric.str.ends_with("_bucket") & pl.col("le").is_null())
        .then(
            pl.format(
                "histogram bucket without a numeric le label (le={})",
                pl.col("le_raw").fill_null("absent"),
            )
        )
        .otherwise(None)
    )
    keep = metric.str.starts_with(PREFIX).fill_null(True) | ~pl.col("ok")
    return (
        s.with_columns(reject=reason, keep=keep)
        .filter(pl.col("keep"))
        .drop("ok", "le_raw", "keep")
        .sort("sid")
    )


def finish_rows(df: pl.DataFrame, *, source: str, file: str | pl.Expr) -> pl.DataFrame:
    """Good samples in the landing table's shape (series skipped by `resolve_series`, with no
    `metric`, are dropped here). `df` carries `time` (Datetime, UTC), `value`, `x_line_number`
    and the `SERIES_COLUMNS`."""
    schema = polars_schema(TABLE)
    x_file = file if isinstance(file, pl.Expr) else pl.lit(file, pl.String)
    return (
        df.filter(pl.col("metric").is_not_null())
        .select(
            pl.col("time").cast(pl.Datetime("us", "UTC")),
            *SERIES_COLUMNS[:8],
            "value",
            SERIES_COLUMNS[8],
            x_source=pl.lit(source, pl.String),
            x_source_file=x_file,
            x_line_number=pl.col("x_line_number").cast(pl.Int64),
        )
        .cast(dict(schema))  # type: ignore[arg-type]
    )


#: the vLLM readers' shape: `inference_samples`, no blank values (vLLM has no sentinels)
VLLM_SHAPE = SeriesShape(TABLE, resolve_series, finish_rows, None)
