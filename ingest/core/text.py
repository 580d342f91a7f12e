"""Text sources' bytes to text, never replacing a byte silently.

A file is UTF-8 (a byte-order mark is dropped) unless its source declares another encoding
(option `encoding`, e.g. `latin-1`, `cp1252`), which then decodes the whole file (a byte that
encoding cannot read is an error naming the file and line). In a UTF-8 file, the lines that
carry invalid bytes are reported by line number with the bytes shown escaped (`\\xff`), so the
reader quarantines the rows on them and lands the rest; their text is kept with the bytes
escaped, for the quarantine's `raw`.
"""

from __future__ import annotations

import codecs
import gzip
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, quarantine_frame, read_bytes
from ingest.core.errors import IngestError

#: bytes checked at once before the lines of a chunk with an invalid byte are looked at
_CHUNK = 1 << 20
_BOM = b"\xef\xbb\xbf"


@dataclass(frozen=True)
class DecodedText:
    """The text of a file and, per 1-based physical line, why the line is not valid text."""

    text: str
    bad_lines: Mapping[int, str] = field(default_factory=dict)


def encoding_option(options: Mapping[str, Any] | None) -> str | None:
    """Option `encoding` (None: UTF-8), checked to name a codec Python knows."""
    value = (options or {}).get("encoding")
    if value is None:
        return None
    try:
        codecs.lookup(str(value))
    except LookupError:
        raise IngestError(f"option encoding: unknown encoding {value!r}") from None
    return str(value)


def _escaped(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def _bad_line_reason(line: bytes) -> str:
    try:
        line.decode("utf-8")
    except UnicodeDecodeError as err:
        return f"invalid UTF-8 bytes {_escaped(line[err.start : err.end])} in the line"
    return ""


def decode_text(data: bytes, file: str | Path, encoding: str | None = None) -> DecodedText:
    """`data` as text (see the module docstring)."""
    if encoding is not None and codecs.lookup(encoding).name != "utf-8":
        try:
            return DecodedText(data.decode(encoding).removeprefix("\ufeff"))
        except UnicodeDecodeError as err:
            line = data.count(b"\n", 0, err.start) + 1
            raise IngestError(
                f"not {encoding} text: bytes {_escaped(data[err.start : err.end])} "
                "(option encoding)",
                file=file,
                line=line,
            ) from None
    data = data.removeprefix(_BOM)
    try:
        return DecodedText(data.decode("utf-8"))
    except UnicodeDecodeError:
        pass
    bad: dict[int, str] = {}
    start, line_no = 0, 1
    while start < len(data):
        end = data.find(b"\n", min(start + _CHUNK, len(data)))
        end = len(data) if end < 0 else end + 1
        chunk = data[start:end]
        try:
            chunk.decode("utf-8")
        except UnicodeDecodeError:
            for i, line in enumerate(chunk.split(b"\n")):
                reason = _bad_line_reason(line)
                if reason:
                    bad[line_no + i] = reason
        line_no += chunk.count(b"\n")
        start = end
    return DecodedText(_escaped(data), bad)


def read_text(path: Path, encoding: str | None = None) -> DecodedText:
    """A file's text (plain or gzip) by `decode_text`."""
    return decode_text(read_bytes(path), path, encoding)


def strict_text(decoded: DecodedText, file: str | Path) -> str:
    """The text of a source whose rows cannot be told apart by line (one JSON document): an
    invalid byte is an error naming the file, the line and the bytes."""
    if decoded.bad_lines:
        line, reason = next(iter(sorted(decoded.bad_lines.items())))
        raise IngestError(
            f"{reason} (not UTF-8: set option encoding if the file is in another encoding)",
            file=file,
            line=line,
        )
    return decoded.text


def row_reasons(row_lines: pl.Series, bad_lines: Mapping[int, str]) -> pl.Series:
    """Per row of a parsed text file (the physical line each row starts on, ascending), the
    reason of the first invalid line inside the row (a row spans its start line up to the next
    row's), else null."""
    if not bad_lines:
        return pl.Series("reason", [None] * len(row_lines), dtype=pl.String)
    rows = pl.DataFrame({"line": row_lines.cast(pl.Int64)}).with_row_index("i")
    bad = pl.DataFrame(
        {
            "line": list(bad_lines),
            "why": [f"line {n}: {r}" for n, r in bad_lines.items()],
        },
        schema={"line": pl.Int64, "why": pl.String},
    ).sort("line")
    owners = (
        bad.join_asof(rows.sort("line"), on="line", strategy="backward")
        .drop_nulls("i")
        .group_by("i")
        .agg(pl.col("why").first())
    )
    return rows.join(owners, on="i", how="left").sort("i")["why"].alias("reason").cast(pl.String)


def _invalid_plain_lines(plain: bytes) -> dict[int, str]:
    """The 1-based lines of uncompressed `plain` that carry bytes which are not UTF-8, with the
    reason; empty, at the cost of one decode, when the whole text is valid."""
    try:
        plain.decode("utf-8")
    except UnicodeDecodeError:
        return dict(decode_text(plain, "").bad_lines)
    return {}


def blank_invalid_lines(data: bytes) -> tuple[bytes, pl.DataFrame | None]:
    """`data` (plain or gzip) with each line that carries bytes which are not UTF-8 emptied
    (line numbers kept), and those lines as `x_line_number`, `reason`, `raw` (None when the
    text is valid; valid plain text is returned as it is, gzip untouched)."""
    plain = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    bad = _invalid_plain_lines(plain)
    if not bad:
        return data, None
    lines = plain.split(b"\n")
    for n in bad:
        lines[n - 1] = b""
    rejected = pl.DataFrame(
        {
            "x_line_number": list(bad),
            "reason": [f"line {n}: {r}" for n, r in bad.items()],
            "raw": [_escaped(plain.split(b"\n")[n - 1]).rstrip("\r") for n in bad],
        },
        schema={"x_line_number": pl.Int64, "reason": pl.String, "raw": pl.String},
    ).sort("x_line_number")
    return b"\n".join(lines), rejected


def _lossy(result: ReadResult) -> bool:
    """Whether a string column of the rows or the quarantine holds U+FFFD."""
    for frame in (result.rows, result.quarantine):
        cols = [c for c, t in frame.schema.items() if t in (pl.String, pl.Categorical)]
        if (
            cols
            and frame.select(
                pl.any_horizontal(
                    pl.col(c).cast(pl.String).str.contains("\ufffd", literal=True).any()
                    for c in cols
                )
            ).item()
        ):
            return True
    return False


def quarantine_invalid_lines(
    result: ReadResult, data: bytes, *, source: str, file: str
) -> ReadResult:
    """`result` of a reader that parsed `data` leniently (polars `utf8-lossy`), with the rows
    on lines that carry bytes which are not UTF-8 moved to its quarantine: the reason names the
    line and shows the bytes escaped, and the raw line keeps them escaped. A row is one line
    (`x_line_number`); a rejected row already on such a line takes the encoding reason."""
    if data[:2] == b"\x1f\x8b":
        # compressed text went to polars as it was: decompress only when the lossy decode
        # left a replacement character in what was read
        if not _lossy(result):
            return result
        data = gzip.decompress(data)
    bad = _invalid_plain_lines(data)
    if not bad:
        return result
    lines = _escaped(data).split("\n")
    numbers = sorted(bad)
    on_bad = pl.col("x_line_number").is_in(numbers)
    moved = result.rows.filter(on_bad).get_column("x_line_number").unique().sort()
    earlier = result.quarantine.filter(on_bad).get_column("x_line_number").unique()
    hit = sorted(set(moved.to_list()) | set(earlier.to_list()))
    rejected = quarantine_frame(
        source,
        file,
        hit,
        [f"line {n}: {bad[n]}" for n in hit],
        [lines[n - 1].rstrip("\r") if n - 1 < len(lines) else None for n in hit],
    )
    quarantine = pl.concat(
        [result.quarantine.filter(~on_bad), rejected], how="vertical_relaxed"
    ).sort("x_line_number")
    return ReadResult(
        rows=result.rows.filter(~on_bad),
        quarantine=quarantine,
        sentinels_dropped=result.sentinels_dropped,
        warnings=result.warnings,
        files=result.files,
    )
