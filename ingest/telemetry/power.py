"""Power sources, by option `format`:

- `meter_csv` (default): facility power meter CSV `timestamp,site,meter,kind,kw` →
  `power_readings`. `kind` must be `facility` or `it` (case-insensitive) and `kw` a number >= 0;
  other rows go to quarantine. Timestamps without an offset are taken in option `timezone`
  (default UTC).
- `node_gpu_rollup`: hourly per-node GPU power / utilisation rollups exported from a monitoring
  database → `node_gpu_power_hourly` (ingest/telemetry/power_rollup.py).

`read_power` reads one file of either format.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, parse_utc, quarantine_from, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import empty_quarantine, polars_schema
from ingest.core.text import quarantine_invalid_lines
from ingest.telemetry.power_rollup import read_node_gpu_rollup

TABLE = "power_readings"
COLUMNS = ("timestamp", "site", "meter", "kind", "kw")
#: option `format` → landing table
FORMAT_TABLES = {"meter_csv": TABLE, "node_gpu_rollup": "node_gpu_power_hourly"}


def power_format(options: dict[str, Any]) -> str:
    fmt = str(options.get("format", "meter_csv"))
    if fmt not in FORMAT_TABLES:
        raise IngestError(
            f"option format: power format {fmt!r} is not supported "
            f"(one of {', '.join(FORMAT_TABLES)})"
        )
    return fmt


def parse_power_csv(
    data: bytes, *, source: str, file: str, options: dict[str, Any] | None = None
) -> ReadResult:
    options = options or {}
    schema = polars_schema(TABLE)
    if not data.strip():
        return ReadResult(pl.DataFrame(schema=schema), empty_quarantine(), files=[file])
    try:
        df = pl.read_csv(
            data,
            infer_schema=False,
            encoding="utf8-lossy",
            truncate_ragged_lines=False,
            raise_if_empty=False,
        )
    except pl.exceptions.PolarsError as err:
        raise IngestError(f"not a readable CSV: {err}".splitlines()[0], file=file) from None
    df = df.rename({c: c.strip().lstrip("\ufeff").lower() for c in df.columns})
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise IngestError(
            f"power CSV lacks columns {missing} (header: {df.columns})", file=file, line=1
        )
    tz = str(options.get("timezone", "UTC"))
    df = df.with_row_index("x_line_number", offset=2).with_columns(
        time=parse_utc(pl.col("timestamp"), tz),
        kind_n=pl.col("kind").str.strip_chars().str.to_lowercase(),
        kw_n=pl.col("kw").str.strip_chars().cast(pl.Float64, strict=False),
        site_n=pl.col("site").str.strip_chars(),
        meter_n=pl.col("meter").str.strip_chars(),
    )
    reason = (
        pl.when(pl.col("time").is_null())
        .then(pl.format("unparseable timestamp {}", pl.col("timestamp").fill_null("")))
        .when(pl.col("site_n").fill_null("") == "")
        .then(pl.lit("empty site"))
        .when(pl.col("meter_n").fill_null("") == "")
        .then(pl.lit("empty meter"))
        .when(~pl.col("kind_n").is_in(["facility", "it"]).fill_null(False))
        .then(pl.format("kind must be facility or it, got {}", pl.col("kind").fill_null("")))
        .when(pl.col("kw_n").is_null() | pl.col("kw_n").is_nan())
        .then(pl.format("kw is not a number: {}", pl.col("kw").fill_null("")))
        .when(pl.col("kw_n") < 0)
        .then(pl.lit("kw is negative"))
        .otherwise(None)
    )
    df = df.with_columns(reason=reason, x_source=pl.lit(source), x_source_file=pl.lit(file))
    bad = df.filter(pl.col("reason").is_not_null())
    raw = pl.concat_str([pl.col(c).fill_null("") for c in COLUMNS], separator=",")
    quarantine = quarantine_from(bad, pl.col("reason"), raw)
    rows = (
        df.filter(pl.col("reason").is_null())
        .select(
            "time",
            site="site_n",
            meter="meter_n",
            kind="kind_n",
            kw="kw_n",
            x_source="x_source",
            x_source_file="x_source_file",
            x_line_number="x_line_number",
        )
        .cast(dict(schema))  # type: ignore[arg-type]
    )
    return ReadResult(rows, quarantine, files=[file])


def read_power_csv(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one power meter CSV (plain or gzip; header required)."""
    path = Path(path)
    data = read_bytes(path)
    result = parse_power_csv(data, source=source, file=str(path), options=options)
    return quarantine_invalid_lines(result, data, source=source, file=str(path))


def read_power(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one power file in the source's `format` (see the module docstring)."""
    options = options or {}
    if power_format(options) == "node_gpu_rollup":
        return read_node_gpu_rollup(path, source=source, options=options)
    return read_power_csv(path, source=source, options=options)
