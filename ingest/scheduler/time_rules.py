"""Rules every scheduler record's times must keep (sacct allocations, Kubernetes pods, Kueue
workloads): no time later than the moment the export was taken, and events in their order
(submitted, then started, then ended). A record that breaks one is quarantined with the field
and the value, so an `End` of 2099 cannot turn one run into a million GPU-hours.

`CLOCK_SKEW` is how far a time may lie past the snapshot before it is impossible: the clocks of
the scheduler and of the machine that ingests differ by seconds, not by minutes.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from ingest.core.errors import IngestError

#: how far past the snapshot time a record's time may lie (clock differences between hosts)
CLOCK_SKEW = timedelta(minutes=5)


def _iso(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def latest_allowed(snapshot_at: datetime | None, now: datetime | None = None) -> datetime:
    """The latest time a record may carry: the snapshot time when known, else now; plus the
    clock skew."""
    base = snapshot_at if snapshot_at is not None else (now or datetime.now(UTC))
    return base + CLOCK_SKEW


def check_not_future(
    times: Sequence[tuple[str, datetime | None]],
    limit: datetime,
    what: str,
    error: type[ValueError],
) -> None:
    """Raise `error` naming the first of `times` (field, value) later than `limit`; `what` says
    what the limit is (`the export's snapshot time`, `now`)."""
    for field, t in times:
        if t is not None and t > limit:
            raise error(f"{field} {_iso(t)} is later than {what} {_iso(limit - CLOCK_SKEW)}")


def check_order(times: Sequence[tuple[str, datetime | None]], error: type[ValueError]) -> None:
    """Raise `error` when a known time of `times` (in the order the events happen) comes
    before an earlier one's: `End 2026-11-28T10:00:00Z is before Start 2026-11-29T...`."""
    known = [(f, t) for f, t in times if t is not None]
    for i, (later_field, later) in enumerate(known):
        for earlier_field, earlier in reversed(known[:i]):  # the nearest first
            if later < earlier:
                raise error(
                    f"{later_field} {_iso(later)} is before {earlier_field} {_iso(earlier)}"
                )


def check_max_run(
    start: datetime | None,
    end: datetime | None,
    open_until: datetime,
    max_hours: float | None,
    error: type[ValueError],
) -> None:
    """Raise `error` when a run from `start` to `end` (still running: to `open_until`) lasts
    longer than `max_hours` (None: no limit)."""
    if max_hours is None or start is None:
        return
    stop = end if end is not None else open_until
    hours = (stop - start).total_seconds() / 3600
    if hours > max_hours:
        span = f"Start {_iso(start)} to " + (
            f"End {_iso(end)}" if end else f"{_iso(open_until)}, still running"
        )
        raise error(f"run of {hours:.1f} h ({span}) is longer than max_run_hours {max_hours:g}")


def max_hours_option(options: dict[str, Any], name: str = "max_run_hours") -> float | None:
    """Option `max_run_hours`: a positive number of hours, or absent / null (no limit)."""
    value = options.get(name)
    if value is None:
        return None
    try:
        hours = float(value)
    except (TypeError, ValueError):
        raise IngestError(f"option {name}: expected a number of hours, got {value!r}") from None
    if not hours > 0:
        raise IngestError(f"option {name}: must be a positive number of hours, got {value!r}")
    return hours
