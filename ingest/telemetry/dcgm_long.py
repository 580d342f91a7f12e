"""Long DCGM exports, CSV or Parquet (`timestamp, hostname, gpu, uuid, metric, value, ...`) →
`dcgm_samples` (formats `long_csv`, `long_parquet`).

One row per sample. Columns are matched by name, case-insensitively:
- time: `timestamp` | `time` | `ts` | `sampled_at` — ISO-8601 text (no offset: UTC, or option
  `timezone`), epoch seconds (ms / µs when the number is that large), or a Parquet timestamp;
- `metric` | `__name__` | `metric_name` | `name` | `field`; `value`;
- labels under their dcgm-exporter names or the landing table's: `hostname`/`Hostname`/`host`,
  `gpu`/`gpu_index`, `uuid`/`UUID`/`gpu_uuid`, `GPU_I_ID`/`mig_instance`,
  `GPU_I_PROFILE`/`mig_profile`, `modelName`/`model_name`, `hpc_job`, `namespace`, `pod`,
  `container` and their `exported_*` variants; a `labels` column of JSON objects adds more;
- every other column (lineage `x_*` columns aside) is a label and lands in `labels`.
Options: `node_label` (as for scrapes: the column holding the node), `timezone`.

`x_line_number` is the CSV line (the header is line 1) or the Parquet row index + 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, parse_utc, quarantine_from, read_bytes
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, empty_quarantine
from ingest.core.text import quarantine_invalid_lines
from ingest.telemetry.dcgm_labels import (
    TABLE,
    finish_rows,
    is_sentinel,
    label_sets,
    resolve_frame,
)

_TIME = ("timestamp", "time", "ts", "sampled_at")
_METRIC = ("metric", "__name__", "metric_name", "name", "field")
_VALUE = ("value",)
#: column name (lower case) → the label it carries
_ALIASES = {
    "host": "Hostname",
    "hostname": "Hostname",
    "gpu": "gpu",
    "gpu_index": "gpu",
    "uuid": "UUID",
    "gpu_uuid": "UUID",
    "gpu_i_id": "GPU_I_ID",
    "mig_instance": "GPU_I_ID",
    "gpu_i_profile": "GPU_I_PROFILE",
    "mig_profile": "GPU_I_PROFILE",
    "modelname": "modelName",
    "model_name": "modelName",
}


def _pick(columns: list[str], names: tuple[str, ...], what: str, file: str) -> str:
    by_lower = {c.lower(): c for c in columns}
    for n in names:
        if n.lower() in by_lower:
            return by_lower[n.lower()]
    raise IngestError(
        f"long DCGM export has no {what} column (one of {', '.join(names)}); "
        f"columns: {', '.join(columns)}",
        file=file,
    )


def _times(col: pl.Series, timezone: str) -> pl.Series:
    """Sample times as Datetime(us, UTC); null where unparseable."""
    dtype = col.dtype
    if isinstance(dtype, pl.Datetime):
        if dtype.time_zone is None:
            return (
                col.dt.replace_time_zone(timezone)
                .dt.convert_time_zone("UTC")
                .dt.cast_time_unit("us")
            )
        return col.dt.convert_time_zone("UTC").dt.cast_time_unit("us")
    s = col.cast(pl.String).str.strip_chars()
    num = s.cast(pl.Float64, strict=False)
    # epoch seconds, milliseconds or microseconds, by magnitude
    us = (
        pl.when(num.abs() >= 1e14)
        .then(num)
        .when(num.abs() >= 1e11)
        .then(num * 1e3)
        .otherwise(num * 1e6)
    )
    frame = pl.DataFrame({"s": s, "num": num})
    return frame.select(
        pl.when(pl.col("num").is_not_null())
        .then(us.round(0).cast(pl.Int64).cast(pl.Datetime("us")).dt.replace_time_zone("UTC"))
        .otherwise(parse_utc(pl.col("s"), assume_tz=timezone))
    ).to_series()


def _values(col: pl.Series) -> pl.Series:
    """Sample values as Float64; null where not a number (text is trimmed first; a numeric
    Parquet column is cast as it is)."""
    if col.dtype.is_numeric():
        return col.cast(pl.Float64)
    return col.cast(pl.String).str.strip_chars().cast(pl.Float64, strict=False)


def parse_long(
    df: pl.DataFrame,
    *,
    source: str,
    file: str,
    first_line: int,
    node_label: str | None = None,
    timezone: str = "UTC",
) -> ReadResult:
    """A long sample frame (as read from CSV or Parquet) → `dcgm_samples` rows. `first_line`:
    the line number of the first row (2 for a CSV with a header, 1 for Parquet)."""
    if df.height == 0:
        return ReadResult(empty_frame(TABLE), empty_quarantine(), files=[file])
    cols = df.columns
    t_col = _pick(cols, _TIME, "time", file)
    m_col = _pick(cols, _METRIC, "metric", file)
    v_col = _pick(cols, _VALUE, "value", file)
    json_col = next((c for c in cols if c.lower() == "labels"), None)
    label_cols: dict[str, list[str]] = {}
    for c in cols:
        if c in (t_col, m_col, v_col, json_col) or c.lower().startswith("x_"):
            continue
        # `hostname` and `Hostname` (or `uuid` and `gpu_uuid`, ...) fill one label: the first
        # non-empty of them, in column order
        label_cols.setdefault(_ALIASES.get(c.lower(), c), []).append(c)
    # the source row as text, for quarantined rows only (formatting every row's time and
    # value as text would cost more than the rest of the parse)
    raw = pl.concat_str([pl.col(c).cast(pl.String).fill_null("") for c in cols], separator=",")

    def with_raw(bad: pl.DataFrame) -> pl.DataFrame:
        rows = (bad["x_line_number"] - first_line).cast(pl.UInt32)
        return bad.with_columns(raw=df[rows].select(raw).to_series())

    # labels are cleaned (trimmed, empty = absent, aliases merged) and resolved once per
    # distinct label set of the file (a few dozen), not once per row; `_sid` numbers the sets
    keys = [
        m_col,
        *(c for cs in label_cols.values() for c in cs),
        *([json_col] if json_col else []),
    ]
    raw_series, sids = label_sets(df, keys)

    def text(c: str) -> pl.Expr:
        return pl.col(c).cast(pl.String).str.strip_chars()

    series = raw_series.select(
        "_sid",
        metric=text(m_col),
        **{
            label: pl.coalesce([pl.when(text(c) != "").then(text(c)) for c in cs])
            for label, cs in label_cols.items()
        },
        **({"_labels_json": pl.col(json_col).cast(pl.String)} if json_col else {}),
    )
    frame = df.select(
        x_line_number=pl.int_range(first_line, first_line + df.height, dtype=pl.Int64),
        time=_times(df[t_col], timezone),
        value=_values(df[v_col]),
        _sid=sids,
    )
    rejected: list[pl.DataFrame] = []

    def reject(mask: pl.Expr, reason: str) -> None:
        """Move the rows matching `mask` to quarantine with `reason`."""
        nonlocal frame
        bad = frame.filter(mask)
        if bad.height:
            rejected.append(
                quarantine_from(
                    with_raw(bad).with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file)),
                    pl.lit(reason),
                    pl.col("raw"),
                )
            )
            frame = frame.filter(~mask)

    reject(pl.col("time").is_null(), f"unparseable time in column {t_col!r}")
    reject(pl.col("value").is_null(), f"value is not a number (column {v_col!r})")
    sentinels = frame.select(is_sentinel(pl.col("value")).sum()).item()
    if sentinels:
        frame = frame.filter(~is_sentinel(pl.col("value")))
    resolved = resolve_frame(
        series,
        list(label_cols),
        node_label,
        labels_json="_labels_json" if json_col else None,
    )
    # the rows of rejected label sets go to quarantine (found on the few sets, so the common
    # file, with none, is not filtered); every other row takes its set's labels by its number
    bad_sets = resolved.filter(pl.col("reject").is_not_null())
    if bad_sets.height:
        is_bad = pl.col("_sid").is_in(bad_sets["_sid"].implode())
        bad_series = frame.filter(is_bad).join(bad_sets, on="_sid", maintain_order="left")
        rejected.append(
            quarantine_from(
                with_raw(bad_series).with_columns(
                    x_source=pl.lit(source), x_source_file=pl.lit(file)
                ),
                pl.col("reject"),
                pl.col("raw"),
            )
        )
        frame = frame.filter(~is_bad)
    labels = resolved.sort("_sid")
    if not labels["_sid"].equals(raw_series["_sid"]):  # a row per set, numbered 0 .. n - 1
        raise IngestError("label sets resolved out of step with the file's rows", file=file)
    labels = labels.drop("_sid", "reject")
    rows = finish_rows(frame.hstack(labels[frame["_sid"]].get_columns()), source=source, file=file)
    quarantine = pl.concat(rejected).sort("x_line_number") if rejected else empty_quarantine()
    return ReadResult(rows, quarantine, sentinels_dropped=int(sentinels), files=[file])


def read_long(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one long CSV (plain or gzip) or Parquet export (option `format`: `long_csv` or
    `long_parquet`)."""
    path = Path(path)
    options = options or {}
    fmt = options.get("format", "long_csv")
    node_label = options.get("node_label")
    timezone = str(options.get("timezone", "UTC"))
    if fmt == "long_parquet":
        try:
            df = pl.read_parquet(path)
        except (OSError, pl.exceptions.PolarsError) as err:
            raise IngestError(f"cannot read Parquet: {err}", file=path) from None
        first = 1
    else:
        data = read_bytes(path)
        if not data.strip():
            return ReadResult(empty_frame(TABLE), empty_quarantine(), files=[str(path)])
        try:
            df = pl.read_csv(data, infer_schema=False, encoding="utf8-lossy")
        except pl.exceptions.PolarsError as err:
            raise IngestError(f"cannot read CSV: {err}", file=path) from None
        df = df.rename({c: c.strip() for c in df.columns})
        first = 2
    result = parse_long(
        df,
        source=source,
        file=str(path),
        first_line=first,
        node_label=node_label,
        timezone=timezone,
    )
    if fmt == "long_parquet":
        return result
    return quarantine_invalid_lines(result, data, source=source, file=str(path))
