"""Days a source could not be read, kept until a later run lands them.

When a source is unavailable (`SourceUnavailable`: its store kept failing after every retry),
the days its run asked for are written to `$FLEETLEDGER_HOME/state/missed_days/<source>.json`
with the error. The source's next run reads them too, whatever days it was asked for, so the
gap closes by itself once the source is back; a run that lands them removes the file.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class MissedDays:
    source: str
    days: list[date]
    error: str
    since: datetime


def missed_path(home: Path, source: str) -> Path:
    return Path(home) / "state" / "missed_days" / f"{_UNSAFE.sub('_', source)}.json"


def read_missed(home: Path, source: str) -> MissedDays | None:
    """The days `source` still owes, or None when it owes none."""
    path = missed_path(home, source)
    if not path.is_file():
        return None
    doc = json.loads(path.read_text())
    return MissedDays(
        source=source,
        days=sorted({date.fromisoformat(d) for d in doc.get("days", [])}),
        error=str(doc.get("error", "")),
        since=datetime.fromisoformat(doc["since"]),
    )


def record_missed(home: Path, source: str, days: list[date], error: str) -> MissedDays:
    """Add `days` to what `source` owes (the days of earlier failures stay); written atomically."""
    before = read_missed(home, source)
    owed = sorted(set(days) | set(before.days if before else []))
    since = before.since if before else datetime.now(UTC)
    path = missed_path(home, source)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".json.tmp")
    doc = {"days": [d.isoformat() for d in owed], "error": error, "since": since.isoformat()}
    tmp.write_text(json.dumps(doc, indent=2) + "\n")
    os.replace(tmp, path)
    return MissedDays(source=source, days=owed, error=error, since=since)


def clear_missed(home: Path, source: str) -> None:
    """`source` landed what it owed."""
    missed_path(home, source).unlink(missing_ok=True)


def with_missed(home: Path, source: str, days: list[date], first_day: date) -> list[date]:
    """The days to ingest: `days` and every owed day from `first_day` on (the partitions'
    first day: an owed day before it cannot be a partition any more)."""
    owed = read_missed(home, source)
    extra = [d for d in (owed.days if owed else []) if d >= first_day]
    return sorted(set(days) | set(extra))
