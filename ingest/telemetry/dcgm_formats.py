"""`read_dcgm`: one DCGM file of any shape, by option `format` (the kind's file reader), its
samples checked for plausibility (ingest/telemetry/dcgm_checks.py)."""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.findings import IngestFinding
from ingest.telemetry.dcgm import FORMATS, TEXT_FORMATS, read_dcgm_text, text_lines
from ingest.telemetry.dcgm_checks import RawLines, check_samples, day_window
from ingest.telemetry.dcgm_json import read_prometheus_json
from ingest.telemetry.dcgm_long import read_long
from ingest.telemetry.dcgm_nvsmi import read_nvidia_smi

#: the shapes whose `x_line_number` is a line of the file (the quarantine keeps that line)
LINE_FORMATS = (*TEXT_FORMATS, "long_csv", "nvidia_smi_csv")


def _read_shape(
    path: Path, fmt: str, source: str, options: dict[str, Any], day: date | None
) -> ReadResult:
    if fmt in TEXT_FORMATS:
        window = day_window(day, options) if day is not None else None
        return read_dcgm_text(path, source=source, options=options, window=window)
    if fmt == "prometheus_range_json":
        return read_prometheus_json(path, source=source, options=options)
    if fmt in ("long_csv", "long_parquet"):
        return read_long(path, source=source, options=options)
    if fmt == "nvidia_smi_csv":
        return read_nvidia_smi(path, source=source, options=options)
    raise IngestError(
        f"dcgm format {fmt!r} is not supported (one of {', '.join(FORMATS)}, or "
        "prometheus_api with an http(s):// location)",
        file=path,
    )


def _file_lines(path: Path, fmt: str) -> RawLines:
    if fmt not in LINE_FORMATS:
        return None

    def lines(numbers: pl.Series) -> pl.DataFrame:
        return text_lines(path.read_bytes()).filter(
            pl.col("x_line_number").is_in(numbers.implode())
        )

    return lines


def read_dcgm(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
    day: date | None = None,
) -> ReadResult:
    """Read one DCGM file of any shape named by option `format` (default `prometheus_text`):
    `prometheus_text` / `openmetrics` scrapes, `prometheus_range_json` (a saved /api/v1/query or
    query_range response), `long_csv` / `long_parquet` exports, `nvidia_smi_csv` logs.

    `day`: the day of a `{date}` file; its samples far from that day are quarantined. A file
    with no sample at all (0 bytes, only comments or a header) is a gap in the telemetry: an
    `empty_file` warning finding."""
    path = Path(path)
    options = options or {}
    fmt = options.get("format", "prometheus_text")
    result = _read_shape(path, fmt, source, options, day)
    result = check_samples(result, options=options, day=day, raw_lines=_file_lines(path, fmt))
    if result.rows.height == 0 and result.quarantine.height == 0 and not result.sentinels_dropped:
        when = f" for {day}" if day is not None else ""
        result.warnings.append(
            IngestFinding(
                "empty_file",
                f"{path}: no DCGM samples in the file{when} (0 bytes, or only comments or a "
                "header): a gap in the telemetry, its GPUs are unobserved (not down) while "
                "nothing else reports them",
                "warning",
                day,
            )
        )
    return result
