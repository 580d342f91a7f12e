"""Counter increases and histogram quantiles of Prometheus series, in Python: the reference the
parser tests check fixtures with, and the rules the dbt models int_inference_counter_hours and
int_inference_latency_hours implement in SQL (docs/metrics.md, "Inference metrics").

- A counter's increase at a sample is its value minus the series' previous sample's; a value
  below the previous one means the counter restarted (the server restarted), and the increase
  is then the new value, as Prometheus' `increase()` counts it. A series' first sample has no
  increase. Increases belong to the hour of the later sample.
- `histogram_quantile(q, buckets)` is Prometheus' rule on (upper bound, cumulative count) pairs
  of one histogram: rank = q × the `+Inf` bucket's count; the first bucket whose count reaches
  the rank holds the quantile, interpolated linearly between its lower bound (the previous
  bucket's bound; 0 for the lowest bucket) and its upper bound; when that is the `+Inf` bucket
  the answer is the highest finite bound. No observations: None.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import polars as pl

from ingest.telemetry.vllm_labels import SERIES_COLUMNS

#: the label columns that name one series of inference_samples: the landed series columns but
#: `labels` (the same sample scraped by two jobs differs only there and counts once)
SERIES_KEY = tuple(c for c in SERIES_COLUMNS if c != "labels")


def counter_increases(rows: pl.DataFrame) -> pl.DataFrame:
    """`rows` (inference_samples) with `increase`: per series in time order, the rise since
    the previous sample, the new value after a drop (a restart), null at a series' first
    sample; and `hour`, the sample's UTC hour."""
    prev = pl.col("value").shift(1).over(list(SERIES_KEY), order_by="time")
    return rows.with_columns(
        increase=pl.when(prev.is_null())
        .then(None)
        .when(pl.col("value") >= prev)
        .then(pl.col("value") - prev)
        .otherwise(pl.col("value")),
        hour=pl.col("time").dt.truncate("1h"),
    )


def hourly_increases(rows: pl.DataFrame) -> pl.DataFrame:
    """Per series and hour: the sum of its increases (`counter_increases`)."""
    return (
        counter_increases(rows)
        .group_by([*SERIES_KEY, "hour"])
        .agg(increase=pl.col("increase").sum())
        .sort([*SERIES_KEY, "hour"], nulls_last=True)
    )


def histogram_quantile(q: float, buckets: Sequence[tuple[float, float]]) -> float | None:
    """Prometheus' histogram_quantile on one histogram's (upper bound, cumulative count)
    buckets, `+Inf` (math.inf) included (module docstring)."""
    ordered = sorted(buckets)
    if len(ordered) < 2 or not math.isinf(ordered[-1][0]):
        return None
    total = ordered[-1][1]
    if total <= 0:
        return None
    rank = q * total
    for i, (bound, count) in enumerate(ordered):
        if count >= rank:
            if math.isinf(bound):
                return ordered[-2][0]
            start, below = (0.0, 0.0) if i == 0 else ordered[i - 1]
            if i == 0 and bound <= 0:
                return bound
            if count == below:  # q = 0 on an empty lowest bucket
                return start
            return start + (bound - start) * (rank - below) / (count - below)
    return ordered[-2][0]
