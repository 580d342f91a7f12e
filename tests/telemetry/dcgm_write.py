"""Write a few DCGM samples as a file of any shape, for the reader tests.

A sample is (metric, labels, value text, time in ms or None for "no timestamp"). Every shape gets
the same samples: exporter text (ms timestamps), OpenMetrics (s), a Prometheus API response, a
long CSV and a long Parquet export.
"""

from __future__ import annotations

import gzip
import io
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

Sample = tuple[str, dict[str, str], str, int | None]

SUFFIX = {
    "prometheus_text": ".prom.gz",
    "openmetrics": ".om",
    "prometheus_range_json": ".json",
    "long_csv": ".csv",
    "long_parquet": ".parquet",
}


def _labels(labels: dict[str, str]) -> str:
    return ",".join(f'{k}="{v}"' for k, v in labels.items())


def text(samples: list[Sample], *, seconds: bool = False) -> bytes:
    lines = ["# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).", "# TYPE x gauge"]
    for name, labels, value, ms in samples:
        ts = "" if ms is None else f" {ms / 1000:.3f}" if seconds else f" {ms}"
        lines.append(f"{name}{{{_labels(labels)}}} {value}{ts}")
    return ("\n".join(lines) + "\n").encode()


def long_frame(samples: list[Sample]) -> pl.DataFrame:
    rows: list[dict[str, Any]] = []
    for name, labels, value, ms in samples:
        assert ms is not None, "long exports carry a time on every row"
        row: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ"),
            "metric": name,
            "value": value,
        }
        row.update({("uuid" if k == "UUID" else k): v for k, v in labels.items()})
        rows.append(row)
    return pl.DataFrame(rows, infer_schema_length=None)


def write(fmt: str, samples: list[Sample], path_stem: Path) -> Path:
    """The samples as a file of shape `fmt`; returns its path."""
    path = path_stem.with_name(path_stem.name + SUFFIX[fmt])
    if fmt == "prometheus_text":
        path.write_bytes(gzip.compress(text(samples)))
    elif fmt == "openmetrics":
        path.write_bytes(text(samples, seconds=True) + b"# EOF\n")
    elif fmt == "prometheus_range_json":
        result = [
            {"metric": {"__name__": n, **lab}, "values": [[ms / 1000, v]]}
            for n, lab, v, ms in samples
        ]
        doc = {"status": "success", "data": {"resultType": "matrix", "result": result}}
        path.write_text(json.dumps(doc))
    elif fmt == "long_csv":
        buf = io.BytesIO()
        long_frame(samples).write_csv(buf)
        path.write_bytes(buf.getvalue())
    else:
        long_frame(samples).write_parquet(path)
    return path
