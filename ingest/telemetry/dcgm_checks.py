"""Plausibility of DCGM samples, whatever the file shape (the last step of `read_dcgm` and of the
live Prometheus pull): what no GPU can report goes to quarantine with the reason, so it never
reaches a mart.

- **A time far from the file's day.** A `{date}` file (the reader is told the day D) holds the
  samples of D; a sample outside `[D − slack, D + 1 day + slack)` is quarantined ("sample time …
  is outside the day …"). Option `day_slack_seconds` (default `DEFAULT_DAY_SLACK_SECONDS`, one
  hour: a scrape just after midnight in the file of the day before, a clock a little off). A
  line cut inside its timestamp (`… 42 17` → a 1970 time) or an untimestamped sample that took
  the file's mtime days later is caught here. A whole file (no `{date}`) has no day of its own:
  only the requested days of it are landed (ingest/core/partitions.py).
- **Impossible values.** Board power (`DCGM_FI_DEV_POWER_USAGE`, `…_INSTANT`) below 0 or over
  option `max_power_w` (default `DEFAULT_MAX_POWER_W`, 2000 W: more than any GPU's limit);
  a percentage utilisation (`GPU_UTIL`, `MEM_COPY_UTIL`, `ENC_UTIL`, `DEC_UTIL`) outside 0–100;
  a `DCGM_FI_PROF_*` activity ratio outside 0–1; framebuffer used (`FB_USED`) below 0 or over
  the GPU's memory, when the data says it: `DCGM_FI_DEV_FB_TOTAL` of the same GPU and time, else
  the `NNGB` of the `modelName` label (`NVIDIA H100 80GB HBM3` → 80 × 1024 MiB).
- **An XID count without a code.** A `DCGM_EXP_XID_ERRORS_COUNT` sample counts the XIDs of the
  code its `xid` label names (else its `err_code` label, as some exporters name it); the
  warehouse reads the code as a whole number (fct_xid_events). A code that is not one
  (`xid="abc"`, `"31.5"`) or a count above 0 that names no code cannot be counted as any XID:
  quarantined. A zero count without a code says nothing and lands (the models leave it out).

DCGM's blank values (no reading: int32 `0x7ffffff0…`, int64 `0x7ffffffffffffff0…`, fp64 `2**47…`)
are dropped and counted by the readers before this (dcgm_labels.is_sentinel).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from typing import Any

import polars as pl

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError
from ingest.core.landing import empty_quarantine

DEFAULT_DAY_SLACK_SECONDS = 3600
DEFAULT_MAX_POWER_W = 2000.0

POWER_METRICS = ("DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_POWER_USAGE_INSTANT")
PERCENT_METRICS = (
    "DCGM_FI_DEV_GPU_UTIL",
    "DCGM_FI_DEV_MEM_COPY_UTIL",
    "DCGM_FI_DEV_ENC_UTIL",
    "DCGM_FI_DEV_DEC_UTIL",
)
RATIO_PREFIX = "DCGM_FI_PROF_"
#: PROF fields that are activity ratios (0-1); the others (bytes/s, FLOP counts) are not
RATIO_SUFFIXES = ("_ACTIVE", "_OCCUPANCY")
FB_USED = "DCGM_FI_DEV_FB_USED"
XID_COUNT = "DCGM_EXP_XID_ERRORS_COUNT"
#: an XID code as the models read it (a whole number that fits an integer)
XID_CODE = r"^[0-9]{1,9}$"
FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
MIB_PER_GB = 1024

#: where one GPU's sample at one time is (the FB_TOTAL of the same GPU and time)
_GPU_TIME = ("time", "host", "gpu", "uuid", "mig_instance")

#: line numbers → the lines of the file they name (None when the shape has no lines)
RawLines = Callable[[pl.Series], pl.DataFrame] | None


def _number(options: dict[str, Any], key: str, default: float) -> float:
    value = options.get(key, default)
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise IngestError(f"option {key} must be a number, got {value!r}") from None
    if number < 0:
        raise IngestError(f"option {key} must be >= 0, got {value!r}")
    return number


def day_window(day: date, options: dict[str, Any]) -> tuple[datetime, datetime]:
    """The times a `{date}` file of `day` may hold: the day ± option `day_slack_seconds`."""
    slack = timedelta(seconds=_number(options, "day_slack_seconds", DEFAULT_DAY_SLACK_SECONDS))
    start = datetime(day.year, day.month, day.day, tzinfo=UTC)
    return start - slack, start + timedelta(days=1) + slack


def _iso(col: str) -> pl.Expr:
    return pl.col(col).dt.strftime("%Y-%m-%dT%H:%M:%S%.3fZ")


def _rules(options: dict[str, Any], day: date | None) -> list[tuple[pl.Expr, pl.Expr]]:
    """(condition, reason) of each check, in the order they are tried: a row's reason is that
    of the first condition it meets. The conditions are cheap comparisons; the reasons format
    text and are computed only for the rows that meet one (`check_samples`)."""
    max_w = _number(options, "max_power_w", DEFAULT_MAX_POWER_W)
    metric, value = pl.col("metric"), pl.col("value")
    is_ratio = metric.str.starts_with(RATIO_PREFIX) & pl.any_horizontal(
        [metric.str.ends_with(s) for s in RATIO_SUFFIXES]
    )
    value_text = value.round(3).cast(pl.String)
    rules: list[tuple[pl.Expr, pl.Expr]] = []
    if day is not None:
        lo, hi = day_window(day, options)
        slack = options.get("day_slack_seconds", DEFAULT_DAY_SLACK_SECONDS)
        rules.append(
            (
                (pl.col("time") < lo) | (pl.col("time") >= hi),
                pl.format(
                    "sample time {} is outside the file's day {} (± day_slack_seconds {} s)",
                    _iso("time"),
                    pl.lit(day.isoformat()),
                    pl.lit(str(slack)),
                ),
            )
        )
    rules += [
        (
            metric.is_in(POWER_METRICS) & ((value < 0) | (value > max_w)),
            pl.format(
                "{} = {} W is outside 0..{} W (option max_power_w)",
                metric,
                value_text,
                pl.lit(f"{max_w:g}"),
            ),
        ),
        (
            metric.is_in(PERCENT_METRICS) & ((value < 0) | (value > 100)),
            pl.format("{} = {} % is outside 0..100 %", metric, value_text),
        ),
        (
            is_ratio & ((value < 0) | (value > 1)),
            pl.format("{} = {} is outside the ratio range 0..1", metric, value_text),
        ),
        (
            (metric == XID_COUNT) & ~pl.col("_xid_code").str.contains(XID_CODE),
            pl.format(
                "{} label {} = '{}' is not an XID code (a whole number)",
                metric,
                pl.col("_xid_label"),
                pl.col("_xid_code"),
            ),
        ),
        (
            (metric == XID_COUNT) & pl.col("_xid_code").is_null() & (value > 0),
            pl.format("{} = {} names no XID code (label xid or err_code)", metric, value_text),
        ),
        (
            (metric == FB_USED) & (value < 0),
            pl.format("{} = {} MiB is negative", metric, value_text),
        ),
        (
            (metric == FB_USED) & (value > pl.col("_fb_total")),
            pl.format(
                "{} = {} MiB exceeds the GPU's memory ({} MiB, {})",
                metric,
                value_text,
                pl.col("_fb_total").round(0).cast(pl.Int64),
                pl.when(pl.col("_fb_from") == FB_TOTAL)
                .then(pl.lit(FB_TOTAL))
                .otherwise(pl.format("modelName {}", pl.col("model_name"))),
            ),
        ),
    ]
    return rules


def _flagged(rules: list[tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    """True for a row that meets any rule's condition (a null comparison meets none)."""
    return pl.any_horizontal([cond.fill_null(False) for cond, _ in rules])


def _reason(rules: list[tuple[pl.Expr, pl.Expr]]) -> pl.Expr:
    """The reason of the first rule a row meets (null when it meets none)."""
    reason = pl.when(pl.lit(False)).then(pl.lit(None, pl.String))
    for cond, text in rules:
        reason = reason.when(cond).then(text)
    return reason.otherwise(pl.lit(None, pl.String))


def _with_memory(rows: pl.DataFrame) -> pl.DataFrame:
    """Add `_fb_total` (MiB) and `_fb_from` to the FB_USED rows: the GPU's memory as the
    same GPU's FB_TOTAL at the same time says (`_fb_from` = FB_TOTAL), else as its model name
    says (`_fb_from` = "modelName"; read once per model name and looked up per row, not
    joined: a join gathered every column of the file again)."""
    models = rows.select(pl.col("model_name").unique().drop_nulls()).with_columns(
        _gb=pl.col("model_name").str.extract(r"(?i)(\d+)\s*GB", 1).cast(pl.Float64, strict=False)
    )
    gb = pl.col("model_name").replace_strict(
        models["model_name"], models["_gb"], default=None, return_dtype=pl.Float64
    )
    is_used = pl.col("metric") == FB_USED
    rows = rows.with_columns(
        _fb_total=pl.when(is_used).then(gb * MIB_PER_GB),
        _fb_from=pl.when(is_used).then(pl.lit("modelName")),
    )
    totals = rows.filter(pl.col("metric") == FB_TOTAL)
    if totals.height == 0:
        return rows
    totals = totals.group_by(list(_GPU_TIME)).agg(_total=pl.col("value").max())
    return (
        rows.join(totals, on=list(_GPU_TIME), how="left", nulls_equal=True, maintain_order="left")
        .with_columns(
            _fb_total=pl.when(is_used & pl.col("_total").is_not_null())
            .then(pl.col("_total"))
            .otherwise(pl.col("_fb_total")),
            _fb_from=pl.when(is_used & pl.col("_total").is_not_null())
            .then(pl.lit(FB_TOTAL))
            .otherwise(pl.col("_fb_from")),
        )
        .drop("_total")
    )


def _with_xid_code(rows: pl.DataFrame) -> pl.DataFrame:
    """Add `_xid_code` (the label's text) and `_xid_label` (`xid` or `err_code`) to the
    DCGM_EXP_XID_ERRORS_COUNT rows (null elsewhere): read once per distinct `labels` value of
    those rows and looked up per row, so a file without the metric parses no JSON."""
    is_count = pl.col("metric") == XID_COUNT
    labels = rows.filter(is_count).select(pl.col("labels").unique().drop_nulls())
    if labels.height == 0:
        return rows.with_columns(
            _xid_code=pl.lit(None, pl.String), _xid_label=pl.lit(None, pl.String)
        )
    xid = pl.col("labels").str.json_path_match("$.xid")
    err_code = pl.col("labels").str.json_path_match("$.err_code")
    labels = labels.with_columns(
        _code=pl.coalesce(xid, err_code),
        _label=pl.when(xid.is_not_null())
        .then(pl.lit("xid"))
        .when(err_code.is_not_null())
        .then(pl.lit("err_code")),
    )

    def lookup(col: str) -> pl.Expr:
        found = pl.col("labels").replace_strict(
            labels["labels"], labels[col], default=None, return_dtype=pl.String
        )
        return pl.when(is_count).then(found)

    return rows.with_columns(_xid_code=lookup("_code"), _xid_label=lookup("_label"))


def _render() -> pl.Expr:
    """A sample as text, for shapes without lines (Parquet, JSON responses)."""
    return pl.format(
        "{} host={} gpu={} uuid={} value={} time={}",
        pl.col("metric"),
        pl.col("host"),
        pl.col("gpu"),
        pl.col("uuid"),
        pl.col("value"),
        _iso("time"),
    )


def check_samples(
    result: ReadResult,
    *,
    options: dict[str, Any] | None = None,
    day: date | None = None,
    raw_lines: RawLines = None,
) -> ReadResult:
    """`result` with its implausible samples moved to quarantine (module docstring). `day`:
    the day of a `{date}` file (None: no day check); `raw_lines(line_numbers)` returns the
    file's lines (`x_line_number`, `line`) for the quarantine's `raw`."""
    rows = result.rows
    if rows.height == 0:
        return result
    options = options or {}
    rules = _rules(options, day)
    checked = _with_xid_code(_with_memory(rows)).with_columns(_flagged=_flagged(rules))
    bad = checked.filter(pl.col("_flagged"))
    if bad.height == 0:
        return result
    bad = bad.with_columns(_reason=_reason(rules))
    if raw_lines is not None:
        lines = raw_lines(bad.get_column("x_line_number").unique())
        bad = bad.join(lines, on="x_line_number", how="left").with_columns(
            raw=pl.coalesce(pl.col("line"), _render())
        )
    else:
        bad = bad.with_columns(raw=_render())
    quarantine = bad.select(
        "x_source",
        "x_source_file",
        "x_line_number",
        reason=pl.col("_reason"),
        raw="raw",
    ).cast(dict(empty_quarantine().schema))  # type: ignore[arg-type]
    good = checked.filter(~pl.col("_flagged")).select(rows.columns)
    return ReadResult(
        good,
        pl.concat([result.quarantine, quarantine], how="vertical_relaxed").sort(
            "x_source_file", "x_line_number", maintain_order=True
        ),
        sentinels_dropped=result.sentinels_dropped,
        warnings=list(result.warnings),
        files=list(result.files),
    )
