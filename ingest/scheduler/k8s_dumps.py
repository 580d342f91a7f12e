"""What the readers of `kubectl get <kind> -A -o json` dumps share (pods, Kueue workloads):
reading the file, the time the dump was taken, and turning its `items` into landing rows with
bad items quarantined (reason and the item's JSON), so one bad object never loses the others."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, date, datetime, time
from pathlib import Path
from typing import Any

import polars as pl

from ingest.core.common import ReadResult, file_mtime, quarantine_frame, to_utc_datetime
from ingest.core.errors import IngestError
from ingest.core.landing import polars_schema
from ingest.core.text import encoding_option, read_text, strict_text

RAW_CHARS = 10000


def load_dump(path: Path, options: dict[str, Any] | None = None) -> Any:
    """The parsed JSON of a dump file (plain or gzip); IngestError naming the line if invalid
    (bytes that are not UTF-8, unless option `encoding` names the file's encoding, included:
    one JSON document cannot be split into good and bad items by line)."""
    text = strict_text(read_text(path, encoding_option(options)), path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise IngestError(f"not valid JSON: {err.msg}", file=path, line=err.lineno) from None


def snapshot_at(path: Path, options: dict[str, Any], dump_name: re.Pattern[str]) -> datetime:
    """Option `snapshot_at`, else 23:59:59Z of the day a file named like `dump_name` (group 1:
    YYYY-MM-DD) carries, else the file's mtime."""
    if options.get("snapshot_at") is not None:
        return to_utc_datetime(options["snapshot_at"], "snapshot_at")
    m = dump_name.search(path.name)
    if m:
        return datetime.combine(date.fromisoformat(m.group(1)), time(23, 59, 59), tzinfo=UTC)
    return file_mtime(path)


def dump_rows(
    doc: Any,
    *,
    kind: str,
    table: str,
    row: Callable[[Any], dict[str, Any]],
    errors: tuple[type[Exception], ...],
    item_error: type[Exception],
    common: dict[str, Any],
    source: str,
    file: str,
) -> ReadResult:
    """Rows of a parsed dump (a List or a single object of `kind`): `row(item)` per item plus the
    `common` columns (cluster, snapshot time) and the lineage columns (`x_line_number`: the
    item's 1-based index). An item whose `row` raises
    one of `errors` is quarantined: the message of an `item_error`, else `malformed <kind>: …`."""
    if isinstance(doc, dict) and "items" in doc:
        items = doc.get("items") or []
    elif isinstance(doc, dict) and doc.get("kind") == kind:
        items = [doc]
    else:
        raise IngestError(
            f"not a `kubectl get {kind.lower()}s -o json` dump (no `items` list)", file=file
        )
    if not isinstance(items, list):
        raise IngestError("`items` is not a list", file=file)
    schema = polars_schema(table)
    cols: dict[str, list[Any]] = {n: [] for n in schema}
    q_rows: list[int] = []
    q_reasons: list[str] = []
    q_raws: list[str] = []
    for i, item in enumerate(items, start=1):
        try:
            values = {
                **row(item),
                **common,
                "x_source": source,
                "x_source_file": file,
                "x_line_number": i,
            }
        except errors as err:
            q_rows.append(i)
            q_reasons.append(
                str(err) if isinstance(err, item_error) else f"malformed {kind.lower()}: {err}"
            )
            q_raws.append(json.dumps(item, sort_keys=True, default=str)[:RAW_CHARS])
            continue
        for k in cols:
            cols[k].append(values[k])
    rows = pl.DataFrame(cols, schema=schema)
    return ReadResult(rows, quarantine_frame(source, file, q_rows, q_reasons, q_raws), files=[file])
