"""`nvidia-smi --query-gpu=… --format=csv[,noheader][,nounits] [-l N]` logs → `dcgm_samples`
(format `nvidia_smi_csv`).

A log is a header (`timestamp, name, pci.bus_id, index, uuid, utilization.gpu [%], …`; printed
again whenever nvidia-smi restarts and appends to the same file) and one row per GPU and poll
(`2026/10/02 12:00:00.123, NVIDIA H100 80GB HBM3, 00000000:18:00.0, 0, GPU-…, 87 %, …`).
Each numeric field becomes one sample of the DCGM metric it corresponds to (`FIELD_METRICS`;
other fields land as `nvidia_smi_<field>`), so the marts read nvidia-smi logs like exporter data.

- No job or pod labels exist here: the marts map runs to GPUs by the `estimated` rule.
- The host comes from option `host`, else from the file name (`<host>.csv[.gz]`).
- `timestamp` is the host's local time: option `timezone` (default UTC).
- Bracketed values (`[N/A]`, `[Not Supported]`, `[Unknown Error]`, `[GPU requires reset]`, …)
  are nvidia-smi's blanks: dropped and counted with the DCGM blank sentinels. `[GPU is lost]`
  means the GPU fell off the bus: the row also lands a `DCGM_FI_DEV_XID_ERRORS` sample of 79
  (what dcgm-exporter reports then), so the marts count the GPU down as they do with DCGM data.
- A row with another number of fields than its header goes to quarantine.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, parse_utc, quarantine_from
from ingest.core.errors import IngestError
from ingest.core.landing import empty_frame, empty_quarantine
from ingest.core.text import quarantine_invalid_lines
from ingest.telemetry.dcgm import text_lines
from ingest.telemetry.dcgm_labels import TABLE, finish_rows, resolve_frame

#: nvidia-smi query field → DCGM metric name
FIELD_METRICS = {
    "utilization.gpu": "DCGM_FI_DEV_GPU_UTIL",
    "utilization.memory": "DCGM_FI_DEV_MEM_COPY_UTIL",
    "utilization.encoder": "DCGM_FI_DEV_ENC_UTIL",
    "utilization.decoder": "DCGM_FI_DEV_DEC_UTIL",
    "memory.used": "DCGM_FI_DEV_FB_USED",
    "memory.free": "DCGM_FI_DEV_FB_FREE",
    "memory.reserved": "DCGM_FI_DEV_FB_RESERVED",
    "memory.total": "DCGM_FI_DEV_FB_TOTAL",
    "power.draw": "DCGM_FI_DEV_POWER_USAGE",
    "power.draw.instant": "DCGM_FI_DEV_POWER_USAGE_INSTANT",
    "clocks.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.current.sm": "DCGM_FI_DEV_SM_CLOCK",
    "clocks.mem": "DCGM_FI_DEV_MEM_CLOCK",
    "clocks.current.memory": "DCGM_FI_DEV_MEM_CLOCK",
    "temperature.gpu": "DCGM_FI_DEV_GPU_TEMP",
    "temperature.memory": "DCGM_FI_DEV_MEMORY_TEMP",
    "fan.speed": "DCGM_FI_DEV_FAN_SPEED",
    "pcie.link.gen.current": "DCGM_FI_DEV_PCIE_LINK_GEN",
    "pcie.link.width.current": "DCGM_FI_DEV_PCIE_LINK_WIDTH",
    "ecc.errors.corrected.volatile.total": "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
    "ecc.errors.uncorrected.volatile.total": "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL",
    "ecc.errors.corrected.aggregate.total": "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL",
    "ecc.errors.uncorrected.aggregate.total": "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
    "clocks_event_reasons.active": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
    "clocks_throttle_reasons.active": "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS",
}
#: identity and text fields → the exporter label they correspond to (not samples)
LABEL_FIELDS = {
    "index": "gpu",
    "uuid": "UUID",
    "gpu_uuid": "UUID",
    "name": "modelName",
    "gpu_name": "modelName",
    "pci.bus_id": "pci_bus_id",
    "gpu_bus_id": "pci_bus_id",
    "serial": "serial",
    "gpu_serial": "serial",
    "driver_version": "DCGM_FI_DRIVER_VERSION",
    "vbios_version": "vbios_version",
    "compute_mode": "compute_mode",
    "persistence_mode": "persistence_mode",
    "mig.mode.current": "mig_mode",
}
LOST = "[GPU is lost]"
XID_METRIC = "DCGM_FI_DEV_XID_ERRORS"
XID_FELL_OFF_BUS = 79.0

_FIELD = r"[a-z_][a-z0-9_.]*(?: \[[^\]]*\])?"
_HEADER = rf"^\s*{_FIELD}(?:\s*,\s*{_FIELD})*\s*$"
_NUMBER = r"([-+]?\d*\.?\d+(?:[eE][-+]?\d+)?)"
_SUFFIXES = (".gz", ".csv", ".log", ".txt", ".out")


def host_from_path(path: Path) -> str:
    """`dgx-01.csv.gz` → `dgx-01` (known suffixes stripped, so dotted host names survive)."""
    name = path.name
    changed = True
    while changed:
        changed = False
        for suffix in _SUFFIXES:
            if name.lower().endswith(suffix) and len(name) > len(suffix):
                name = name[: -len(suffix)]
                changed = True
    return name


def _metric_name(field: str) -> str:
    return FIELD_METRICS.get(field, "nvidia_smi_" + re.sub(r"[^a-zA-Z0-9]+", "_", field))


def _numbers(text: pl.Expr) -> pl.Expr:
    """A field's number: `87 %` → 87, `412.50 W` → 412.5, `0x1` → 1, `P0` → 0."""
    hex_digits = text.str.strip_prefix("0x")
    return (
        pl.when(text.str.contains(r"^0x[0-9a-fA-F]+$"))
        .then(hex_digits.str.to_integer(base=16, strict=False).cast(pl.Float64))
        .otherwise(text.str.extract(_NUMBER, 1).cast(pl.Float64, strict=False))
    )


def _segment(
    lines: pl.DataFrame, header: str, host: str, timezone: str
) -> tuple[pl.DataFrame, pl.DataFrame, int]:
    """Rows under one header → (long samples with label columns, ragged rows, blanks)."""
    names = [re.sub(r"\s*\[[^\]]*\]\s*$", "", f.strip()) for f in header.split(",")]
    if "timestamp" not in names:
        raise IngestError(f"nvidia-smi header has no timestamp field: {header.strip()!r}")
    rows = lines.with_columns(
        f=pl.col("line").str.split(",").list.eval(pl.element().str.strip_chars())
    )
    ragged = rows.filter(pl.col("f").list.len() != len(names))
    rows = rows.filter(pl.col("f").list.len() == len(names))
    wide = rows.select(
        "x_line_number",
        "line",
        *[pl.col("f").list.get(i).alias(f"c{i}") for i in range(len(names))],
    )
    t = names.index("timestamp")
    labels = {LABEL_FIELDS[n]: f"c{i}" for i, n in enumerate(names) if n in LABEL_FIELDS}
    metrics = [i for i, n in enumerate(names) if i != t and n not in LABEL_FIELDS]
    wide = wide.with_columns(
        time=parse_utc(pl.col(f"c{t}").str.replace_all("/", "-", literal=True), timezone),
        lost=pl.any_horizontal([pl.col(f"c{i}") == LOST for i in metrics] or [pl.lit(False)]),
        Hostname=pl.lit(host),
        **{label: pl.col(c) for label, c in labels.items()},
    )
    keep = ["x_line_number", "line", "time", "Hostname", *labels]
    long = wide.select(
        *keep,
        *[pl.col(f"c{i}").alias(_metric_name(names[i])) for i in metrics],
    ).unpivot(
        [_metric_name(names[i]) for i in metrics],
        index=keep,
        variable_name="metric",
        value_name="text",
    )
    blank = long.filter(pl.col("text").str.starts_with("[")).height
    long = long.filter(~pl.col("text").str.starts_with("[")).with_columns(
        value=_numbers(pl.col("text"))
    )
    xid = wide.filter(pl.col("lost")).select(
        *keep, metric=pl.lit(XID_METRIC), text=pl.lit(LOST), value=pl.lit(XID_FELL_OFF_BUS)
    )
    long = pl.concat([long, xid], how="vertical_relaxed")
    return long, ragged.select("x_line_number", "line"), blank


def parse_nvidia_smi(
    data: bytes, *, source: str, file: str, host: str, timezone: str = "UTC"
) -> ReadResult:
    """Parse one nvidia-smi CSV log already in memory (plain or gzip)."""
    try:
        lines = text_lines(data)
    except (OSError, pl.exceptions.PolarsError) as err:
        raise IngestError(f"cannot read nvidia-smi log: {err}", file=file) from None
    lines = lines.filter(pl.col("line").is_not_null() & (pl.col("line").str.strip_chars() != ""))
    if lines.height == 0:
        return ReadResult(empty_frame(TABLE), empty_quarantine(), files=[file])
    lines = lines.with_columns(
        x_line_number=pl.col("x_line_number").cast(pl.Int64),
        header=pl.col("line").str.contains(_HEADER),
    )
    if not lines.item(0, "header"):
        raise IngestError(
            "not an nvidia-smi --format=csv log: the first line is not a header "
            f"(query with a header, not `noheader`): {lines.item(0, 'line')[:120]!r}",
            file=file,
            line=lines.item(0, "x_line_number"),
        )
    lines = lines.with_columns(segment=pl.col("header").cum_sum())
    headers = lines.filter(pl.col("header"))
    parts: list[pl.DataFrame] = []
    ragged: list[pl.DataFrame] = []
    blanks = 0
    for seg, header in headers.select("segment", "line").iter_rows():
        body = lines.filter((pl.col("segment") == seg) & ~pl.col("header"))
        try:
            long, bad, n = _segment(body.select("x_line_number", "line"), header, host, timezone)
        except IngestError as err:
            raise IngestError(err.problem, file=file) from None
        parts.append(long)
        ragged.append(bad)
        blanks += n
    long = pl.concat(parts, how="diagonal_relaxed")
    label_cols = [c for c in long.columns if c not in ("x_line_number", "line", "time", "metric")]
    label_cols = [c for c in label_cols if c not in ("text", "value")]
    rejected = [
        quarantine_from(
            r.with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file)),
            pl.lit("row does not have the header's number of fields"),
            pl.col("line"),
        )
        for r in ragged
        if r.height
    ]

    def reject(frame: pl.DataFrame, mask: pl.Expr, reason: pl.Expr) -> pl.DataFrame:
        bad = frame.filter(mask)
        if bad.height:
            rejected.append(
                quarantine_from(
                    bad.with_columns(x_source=pl.lit(source), x_source_file=pl.lit(file)),
                    reason,
                    pl.col("line"),
                )
            )
        return frame.filter(~mask)

    long = reject(long, pl.col("time").is_null(), pl.lit("unparseable timestamp"))
    long = reject(
        long,
        pl.col("value").is_null(),
        pl.format("field for {} is not a number: {}", "metric", "text"),
    )
    long = resolve_frame(long.drop("text"), label_cols, None)
    long = reject(long, pl.col("reject").is_not_null(), pl.col("reject"))
    rows = finish_rows(long.sort("x_line_number", maintain_order=True), source=source, file=file)
    quarantine = (
        pl.concat(rejected)
        .unique(["x_line_number", "reason"], maintain_order=True)
        .sort("x_line_number")
        if rejected
        else empty_quarantine()
    )
    return ReadResult(rows, quarantine, sentinels_dropped=blanks, files=[file])


def read_nvidia_smi(
    path: str | Path, *, source: str, options: dict[str, Any] | None = None
) -> ReadResult:
    """Read one nvidia-smi CSV log (plain or gzip). Options: `host`, `timezone`."""
    path = Path(path)
    options = options or {}
    try:
        data = path.read_bytes()
    except OSError as err:
        raise IngestError(f"cannot read file: {err.strerror or err}", file=path) from None
    result = parse_nvidia_smi(
        data,
        source=source,
        file=str(path),
        host=str(options.get("host") or host_from_path(path)),
        timezone=str(options.get("timezone", "UTC")),
    )
    return quarantine_invalid_lines(result, data, source=source, file=str(path))
