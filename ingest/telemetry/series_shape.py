"""`SeriesShape`: what a Prometheus-format reader does with the series it parsed, so that one
parser (exposition text: ingest/telemetry/dcgm.py; API JSON: ingest/telemetry/dcgm_json.py; the
live pull: ingest/telemetry/dcgm_prometheus.py) serves every source kind whose data is
Prometheus metrics: DCGM (`dcgm_samples`) and vLLM (`inference_samples`).

A reader reduces its input to series (`sid`, `metric`, `ok`) and label pairs (`sid`, `k`, `v`);
the shape's `resolve` turns them into the landing table's label columns plus a `reject` reason
per series, `finish` puts the good samples in the landing table's column order, `blank` says
which values mean "no reading" (dropped and counted, never landed). Only polars is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import polars as pl

#: (series, pairs, node_label) -> per series: `sid`, the label columns, `reject`
Resolve = Callable[[pl.DataFrame, pl.DataFrame, str | None], pl.DataFrame]
#: (samples with `time`, `value`, `x_line_number` and the label columns, source, file) -> rows
Finish = Callable[..., pl.DataFrame]


@dataclass(frozen=True)
class SeriesShape:
    """The landing table a Prometheus reader fills and how (module docstring)."""

    table: str
    resolve: Resolve
    finish: Finish
    blank: Callable[[pl.Expr], pl.Expr] | None = None
