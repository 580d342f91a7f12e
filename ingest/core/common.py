"""Helpers shared by the readers: read results, file bytes, quarantine frames, UTC times."""

from __future__ import annotations

import glob
import gzip
import os
import zlib
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.errors import IngestError
from ingest.core.findings import Warning_
from ingest.core.landing import QUARANTINE_TABLE, empty_frame, polars_schema

UTC_TS = pl.Datetime("us", "UTC")


@dataclass
class ReadResult:
    """What a reader returns: good rows in the landing table's shape, and rejected rows."""

    rows: pl.DataFrame
    quarantine: pl.DataFrame
    sentinels_dropped: int = 0
    # plain strings or IngestFinding (ingest/core/findings.py)
    warnings: list[Warning_] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    @staticmethod
    def concat(table: str, results: list[ReadResult]) -> ReadResult:
        if not results:
            return ReadResult(empty_frame(table), empty_frame(QUARANTINE_TABLE))
        rows = [r.rows for r in results]
        return ReadResult(
            rows=pl.concat(rows, how="diagonal_relaxed") if len(rows) > 1 else rows[0],
            quarantine=pl.concat([r.quarantine for r in results], how="vertical_relaxed"),
            sentinels_dropped=sum(r.sentinels_dropped for r in results),
            warnings=[w for r in results for w in r.warnings],
            files=[f for r in results for f in r.files],
        )


def expand(pattern: str) -> list[Path]:
    """Files matching a path, directory (all files under it) or glob, sorted; hidden skipped."""
    if os.path.isdir(pattern):
        return sorted(
            p
            for p in Path(pattern).rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.parts)
        )
    if glob.has_magic(pattern):
        return sorted(Path(p) for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
    return [Path(pattern)] if os.path.isfile(pattern) else []


def decimal_or_none(value: Any) -> Decimal | None:
    """A money amount as written (`Decimal` of its text, for exact hand totals); None when it
    is missing, not a number, or not finite."""
    if value is None:
        return None
    try:
        d = Decimal(str(value).strip())
    except InvalidOperation:
        return None
    return d if d.is_finite() else None


def read_bytes(path: Path) -> bytes:
    """The file's bytes, gunzipped when it is gzip (by its magic number, not its name)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise IngestError(f"cannot read file: {err.strerror or err}", file=path) from None
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error) as err:
            raise IngestError(f"corrupt or truncated gzip data: {err}", file=path) from None
    return data


def file_mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(Path(path).stat().st_mtime, tz=UTC)


def quarantine_frame(
    source: str,
    file: str,
    line_numbers: pl.Series | list[int],
    reasons: pl.Series | list[str] | str,
    raws: pl.Series | list[str | None],
) -> pl.DataFrame:
    n = len(line_numbers)
    if isinstance(reasons, str):
        reasons = [reasons] * n
    schema = polars_schema(QUARANTINE_TABLE)
    return pl.DataFrame(
        {
            "x_source": [source] * n,
            "x_source_file": [file] * n,
            "x_line_number": line_numbers,
            "reason": reasons,
            "raw": raws,
        },
        schema=schema,
    )


def quarantine_from(df: pl.DataFrame, reason: pl.Expr, raw: pl.Expr) -> pl.DataFrame:
    """A quarantine frame from rejected rows that carry lineage columns."""
    return df.select(
        pl.col("x_source").cast(pl.String),
        pl.col("x_source_file").cast(pl.String),
        pl.col("x_line_number").cast(pl.Int64),
        reason.cast(pl.String).alias("reason"),
        raw.cast(pl.String).alias("raw"),
    )


def parse_utc(expr: pl.Expr, assume_tz: str = "UTC") -> pl.Expr:
    """Parse ISO-8601-like timestamps to `Datetime(us, UTC)`; null where unparseable.

    Accepts `T` or space, optional fraction, `Z` / `+HH:MM` / ` UTC` suffixes, and times
    without seconds. Times without an offset are taken in `assume_tz`.
    """
    s = (
        expr.cast(pl.String)
        .str.strip_chars()
        .str.replace(r"(?i)\s*(UTC|Z)$", "+00:00")
        .str.replace(r"([+-]\d{2})(\d{2})$", "${1}:${2}")
        .str.replace("T", " ", literal=True, n=1)
    )
    aware = pl.coalesce(
        s.str.to_datetime("%Y-%m-%d %H:%M:%S%.f%:z", time_unit="us", time_zone="UTC", strict=False),
        s.str.to_datetime("%Y-%m-%d %H:%M%:z", time_unit="us", time_zone="UTC", strict=False),
    )
    naive = pl.coalesce(
        s.str.to_datetime("%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False),
        s.str.to_datetime("%Y-%m-%d %H:%M", time_unit="us", strict=False),
    )
    if assume_tz == "UTC":
        naive = naive.dt.replace_time_zone("UTC")
    else:
        naive = naive.dt.replace_time_zone(
            assume_tz, ambiguous="earliest", non_existent="null"
        ).dt.convert_time_zone("UTC")
    return pl.coalesce(aware, naive)


def k8s_timestamp(value: Any, what: str, error: type[ValueError] = ValueError) -> datetime | None:
    """A Kubernetes API timestamp (`2026-10-02T17:02:31Z`) as an aware UTC datetime; None when
    absent. Raises `error` (a reader's row error) when it is not a timestamp."""
    if value in (None, ""):
        return None
    if not isinstance(value, str):
        raise error(f"{what} is not a timestamp: {value!r}")
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise error(f"{what} is not a timestamp: {value!r}") from None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)


def to_utc_datetime(value: Any, what: str) -> datetime:
    """A datetime option value (datetime, date or ISO string) as an aware UTC datetime."""
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):
        dt = datetime(value.year, value.month, value.day)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError:
            raise IngestError(f"option {what}: not an ISO timestamp: {value!r}") from None
    else:
        raise IngestError(f"option {what}: expected a timestamp, got {value!r}")
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.astimezone(UTC)
