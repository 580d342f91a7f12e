"""sacct times printed in a local zone (option `timezone`), across daylight-saving changes.

A local time in the hour repeated when clocks go back (01:30 on the first Sunday of November in
New York) has two readings, an hour apart; a local time skipped when clocks go forward (02:30 on
the second Sunday of March) has none. sacct prints neither offset nor zone name, so:
- an ambiguous Start or End is resolved with `Elapsed`: of the readings, the pair whose End minus
  Start is closest to Elapsed wins (ties, and rows without Elapsed: the first reading, the
  zone library's `fold=0`); an ambiguous Submit or Eligible takes the one reading no later than
  Start, else (both are, or Start is unknown) the first;
- a nonexistent time is read as the zone library reads it (`fold=0`: the offset before the
  change, so 02:30 EST = 07:30 UTC = 03:30 EDT).
Every time so resolved is counted (`LocalTimeNotes`) and reported as an ingest finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime
from itertools import product
from zoneinfo import ZoneInfo

from ingest.scheduler.slurm_fields import sacct_time


@dataclass
class LocalTimeNotes:
    """What resolving a file's local times took, counted for its findings."""

    by_elapsed: int = 0  # ambiguous Start/End times resolved with Elapsed
    first_reading: int = 0  # ambiguous times nothing could resolve: the first reading
    nonexistent: int = 0  # skipped (spring-forward) times, read as the zone library does
    examples: list[str] = field(default_factory=list)

    def note(self, kind: str, text: str) -> None:
        setattr(self, kind, getattr(self, kind) + 1)
        if len(self.examples) < 3:
            self.examples.append(text)


def readings(value: str, field_name: str, tz: ZoneInfo | None) -> tuple[list[datetime], bool]:
    """The UTC readings of one sacct time (empty for the null words) and whether the local time
    does not exist. Two readings when the local time is ambiguous (earlier first)."""
    first = sacct_time(value, field_name, tz)
    if first is None or tz is None:
        return ([] if first is None else [first]), False
    naive = datetime.fromisoformat(value.strip())
    second = naive.replace(tzinfo=tz, fold=1).astimezone(UTC)
    back = first.astimezone(tz).replace(tzinfo=None)
    if back != naive:  # 02:30 in a spring-forward gap comes back as 03:30
        return [first], True
    return ([first, second] if second != first else [first]), False


def resolve_times(
    raw: dict[str, str],
    tz: ZoneInfo | None,
    elapsed: int | None,
    notes: LocalTimeNotes,
    where: str,
) -> dict[str, datetime | None]:
    """Submit, Eligible, Start and End of one row (`raw`: field name -> text) in UTC, ambiguous
    and nonexistent local times resolved as the module docstring says; `where` names the row
    in the notes' examples."""
    names = ("Submit", "Eligible", "Start", "End")
    opts = {n: readings(raw.get(n.lower(), ""), n, tz) for n in names}
    for n, (_, missing) in opts.items():
        if missing:
            notes.note("nonexistent", f"{where}: {n} {raw.get(n.lower(), '').strip()}")
    out: dict[str, datetime | None] = {n: (v[0] if v else None) for n, (v, _) in opts.items()}
    starts, ends = opts["Start"][0], opts["End"][0]
    if len(starts) > 1 or len(ends) > 1:
        text = f"{where}: Start {raw.get('start', '').strip()} End {raw.get('end', '').strip()}"
        if elapsed is not None and starts and ends:
            pairs = sorted(
                product(starts, ends),
                key=lambda p: abs((p[1] - p[0]).total_seconds() - elapsed),
            )
            out["Start"], out["End"] = pairs[0]
            notes.note("by_elapsed", text)
        else:
            notes.note("first_reading", text)
    for n in ("Submit", "Eligible"):
        values = opts[n][0]
        if len(values) > 1:
            start = out["Start"]
            fits = [v for v in values if start is not None and v <= start]
            if len(fits) == 1:
                out[n] = fits[0]
            else:
                out[n] = values[0]
                notes.note("first_reading", f"{where}: {n} {raw.get(n.lower(), '').strip()}")
    return out
