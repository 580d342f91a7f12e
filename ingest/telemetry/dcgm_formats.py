"""`read_dcgm`: one DCGM file of any shape, by option `format` (the kind's file reader)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.telemetry.dcgm import FORMATS, TEXT_FORMATS, read_dcgm_text
from ingest.telemetry.dcgm_json import read_prometheus_json
from ingest.telemetry.dcgm_long import read_long
from ingest.telemetry.dcgm_nvsmi import read_nvidia_smi


def read_dcgm(
    path: str | Path,
    *,
    source: str,
    options: dict[str, Any] | None = None,
) -> ReadResult:
    """Read one DCGM file of any shape named by option `format` (default `prometheus_text`):
    `prometheus_text` / `openmetrics` scrapes, `prometheus_range_json` (a saved /api/v1/query or
    query_range response), `long_csv` / `long_parquet` exports, `nvidia_smi_csv` logs."""
    options = options or {}
    fmt = options.get("format", "prometheus_text")
    if fmt in TEXT_FORMATS:
        return read_dcgm_text(path, source=source, options=options)
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
