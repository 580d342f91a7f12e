"""Hourly per-node GPU power / utilisation rollups, as monitoring databases export them →
`node_gpu_power_hourly` (power source option `format: node_gpu_rollup`).

The shape is the Cornell BioHPC export (samples/power/*.tsv): a header naming the columns
(`name, timestamp, powerave, powermin, powermax, tempave, …, utilave, …, gmemave, …`), one row per
node and hour, often newest first, written by SQL Server Management Studio: a UTF-8 BOM, and a
footer of `(8497 rows affected)` and `Completion time: …` lines after a blank line.

- Columns are found by the header, whatever their order: each landing column has a list of
  accepted header names (case, spaces and `_` ignored; see `HEADER_NAMES`); option `columns`
  (landing column → header name) adds to them. `host`, `time` and `power_avg_w` are required.
- Footer lines (`(N rows affected)`, `Completion time: …`) are not data and not errors: they are
  skipped and counted in a warning; when the `(N rows affected)` count differs from the data
  rows read, that is a warning too (a truncated export).
- Rows are landed sorted by host and time (the export is descending). A row whose host is empty,
  whose time does not parse, whose value is not a number, or that repeats a (host, hour) already
  read goes to quarantine with the reason; range rules (power ≥ 0, utilisation 0–100) are the
  quality suite's (ingest/core/quality_landed.py).

Options: `delimiter` (default: tab when the header has one, else `,`), `timezone` of the
timestamps (default UTC), `columns`, `interval_seconds` (the rollup period, default 3600).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, parse_utc, quarantine_from, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import empty_quarantine, polars_schema
from ingest.core.text import quarantine_invalid_lines

TABLE = "node_gpu_power_hourly"

#: landing column → accepted header names (normalised: lower case, no spaces, `_` or `-`)
HEADER_NAMES: dict[str, tuple[str, ...]] = {
    "host": ("name", "host", "hostname", "node", "nodename", "server", "servername"),
    "time": ("timestamp", "time", "hour", "datetime", "ts", "period", "periodstart"),
    "power_avg_w": ("powerave", "poweravg", "poweraverage", "powermean", "poweravgw", "power"),
    "power_min_w": ("powermin", "powerminw"),
    "power_max_w": ("powermax", "powermaxw"),
    "temp_avg_c": ("tempave", "tempavg", "temperatureave", "temperatureavg", "tempavgc"),
    "temp_min_c": ("tempmin", "temperaturemin", "tempminc"),
    "temp_max_c": ("tempmax", "temperaturemax", "tempmaxc"),
    "util_avg": ("utilave", "utilavg", "utilizationave", "utilizationavg", "gpuutilavg"),
    "util_min": ("utilmin", "utilizationmin", "gpuutilmin"),
    "util_max": ("utilmax", "utilizationmax", "gpuutilmax"),
    "gmem_avg": ("gmemave", "gmemavg", "memutilavg", "memave"),
    "gmem_min": ("gmemmin", "memutilmin", "memmin"),
    "gmem_max": ("gmemmax", "memutilmax", "memmax"),
}
REQUIRED = ("host", "time", "power_avg_w")
VALUE_COLUMNS = tuple(c for c in HEADER_NAMES if c not in ("host", "time"))

_FOOTER = r"^\s*(\(\d+ rows? affected\)|Completion time:.*)\s*$"
_ROWS_AFFECTED = r"^\s*\((\d+) rows? affected\)\s*$"


def _norm(name: str) -> str:
    return re.sub(r"[\s_\-]", "", name.strip().lstrip("\ufeff")).lower()


def _column_map(header: list[str], options: dict[str, Any], file: str) -> dict[str, int]:
    """Landing column → index in the header."""
    positions = {_norm(h): i for i, h in reversed(list(enumerate(header)))}
    extra = options.get("columns") or {}
    if not isinstance(extra, dict):
        raise IngestError(f"option columns: expected a mapping, got {extra!r}", file=file)
    found: dict[str, int] = {}
    for col, names in HEADER_NAMES.items():
        wanted = ([_norm(str(extra[col]))] if col in extra else []) + list(names)
        for n in wanted:
            if n in positions:
                found[col] = positions[n]
                break
    unknown = [k for k in extra if k not in HEADER_NAMES]
    if unknown:
        raise IngestError(f"option columns: unknown landing columns {unknown}", file=file)
    missing = [c for c in REQUIRED if c not in found]
    if missing:
        raise IngestError(
            f"rollup header lacks {missing} (header: {header}); map them with option columns",
            file=file,
            line=1,
        )
    return found


def parse_rollup(
    data: bytes, *, source: str, file: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Parse one rollup export already in memory (see `read_node_gpu_rollup`)."""
    options = options or {}
    schema = polars_schema(TABLE)
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = text.split("\n")
    if not text.strip():
        return ReadResult(pl.DataFrame(schema=schema), empty_quarantine(), files=[file])
    header_line = lines[0].rstrip("\r")
    delim = str(options.get("delimiter") or ("\t" if "\t" in header_line else ","))
    header = header_line.split(delim)
    cols = _column_map(header, options, file)
    tz = str(options.get("timezone", "UTC"))

    df = pl.DataFrame({"line": lines[1:]}, schema={"line": pl.String}).with_row_index(
        "x_line_number", offset=2
    )
    df = df.with_columns(pl.col("line").str.strip_chars_end("\r")).filter(
        pl.col("line").str.strip_chars() != ""
    )
    is_footer = pl.col("line").str.contains(_FOOTER)
    footer = df.filter(is_footer)
    df = df.filter(~is_footer).with_columns(
        x_source=pl.lit(source, pl.String),
        x_source_file=pl.lit(file, pl.String),
        fields=pl.col("line").str.split(delim),
    )
    n_fields = len(header)
    field = {c: pl.col("fields").list.get(i, null_on_oob=True) for c, i in cols.items()}
    values = {
        c: field[c].str.strip_chars().cast(pl.Float64, strict=False) if c in field else None
        for c in VALUE_COLUMNS
    }
    df = df.with_columns(
        host=field["host"].str.strip_chars(),
        time=parse_utc(field["time"], tz),
        **{c: v for c, v in values.items() if v is not None},
    )
    not_number = [
        pl.when(
            (field[c].str.strip_chars().fill_null("") != "")
            & (pl.col(c).is_null() | pl.col(c).is_nan())
        ).then(pl.lit(c))
        for c in VALUE_COLUMNS
        if c in field
    ]
    bad_value = pl.concat_list(not_number).list.drop_nulls()
    reason = (
        pl.when(pl.col("fields").list.len() != n_fields)
        .then(pl.format(f"expected {n_fields} fields, found {{}}", pl.col("fields").list.len()))
        .when(pl.col("host").fill_null("") == "")
        .then(pl.lit("empty host"))
        .when(pl.col("time").is_null())
        .then(pl.format("unparseable timestamp {}", field["time"].fill_null("")))
        .when(bad_value.list.len() > 0)
        .then(pl.format("not a number in {}", bad_value.list.join(", ")))
        .when(pl.col("power_avg_w").is_null())
        .then(pl.lit("empty power_avg_w"))
        .otherwise(None)
    )
    df = df.with_columns(reason=reason)
    # a (host, hour) already read among the good rows is a duplicate (the first one is kept)
    repeated = pl.col("reason").is_null() & ~pl.struct("host", "time").is_first_distinct().over(
        pl.col("reason").is_null()
    )
    df = df.with_columns(
        reason=pl.when(repeated)
        .then(pl.lit("duplicate row for this host and time"))
        .otherwise(pl.col("reason"))
    )
    bad = df.filter(pl.col("reason").is_not_null())
    quarantine = quarantine_from(bad, pl.col("reason"), pl.col("line"))
    interval = int(options.get("interval_seconds", 3600))
    good = df.filter(pl.col("reason").is_null())
    rows = (
        good.with_columns(
            [pl.lit(None, pl.Float64).alias(c) for c in VALUE_COLUMNS if c not in cols]
        )
        .with_columns(interval_seconds=pl.lit(interval, pl.Int64))
        .sort("host", "time", maintain_order=True)
        .select(list(schema))
        .cast(dict(schema))  # type: ignore[arg-type]
    )
    warnings: list[str] = []
    if footer.height:
        warnings.append(
            f"{file}: {footer.height} footer lines skipped (not data): "
            + "; ".join(footer["line"].str.strip_chars().to_list()[:3])
        )
        affected = footer["line"].str.extract(_ROWS_AFFECTED, 1).cast(pl.Int64).drop_nulls()
        if affected.len() and int(affected[0]) != df.height:
            warnings.append(
                f"{file}: the footer says {int(affected[0])} rows, the file holds {df.height}"
            )
    return ReadResult(rows, quarantine, warnings=warnings, files=[file])


def read_node_gpu_rollup(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one rollup export (plain or gzip) into `node_gpu_power_hourly` rows."""
    path = Path(path)
    data = read_bytes(path)
    result = parse_rollup(data, source=source, file=str(path), options=options)
    return quarantine_invalid_lines(result, data, source=source, file=str(path))
