"""Landing guards: a run never removes landed rows without saying so (docs/landing.md,
"Landing guards").

Before a partition is replaced, `ShrinkGuard.admit` compares what the source now holds for it
(rows landed plus rows quarantined) with what is landed there:

- the source holds nothing for the partition (a `{date}` day without files, a day or period no
  row falls in, a sacct window that came back empty) while landed rows are there: a gap — the
  landed partition is kept and a `warning` finding says so;
- it would drop more than `max_row_drop` (a share, default 0.5) of the landed rows: refused —
  the landed partition is kept and, once the strategy has landed every other partition, the
  source fails with an IngestError naming the table, the partition, the counts and how to force
  it (`check`);
- billing: a file of the location that is empty (0 rows, or a header only) while landed rows of
  a period came from it is refused the same way (`refuse`), whatever the share.

`allow` (the `fleetledger run --allow-shrink SOURCE` flag, a run tag that a scheduled run does not
carry) lets every replacement through; each one that removes rows is then an `info` finding.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ingest.core.errors import IngestError
from ingest.core.landing import QUARANTINE_TABLE, partition_day, partition_dir
from ingest.core.report import IngestReport

DEFAULT_MAX_ROW_DROP = 0.5
#: the run tag (and CLI flag) that says a source's partitions were really emptied
ALLOW_SHRINK_TAG = "fleetledger/allow_shrink"


def landed_rows(directory: Path) -> int:
    """Rows in the Parquet files of a landed partition (from their footers); 0 when absent. A
    file whose footer cannot be read stops the caller with its path."""
    if not directory.is_dir():
        return 0
    return sum(_footer_rows(p) for p in sorted(directory.glob("*.parquet")))


def _footer_rows(file: Path) -> int:
    try:
        return pq.read_metadata(file).num_rows
    except (pa.ArrowException, OSError) as err:
        raise IngestError(
            f"{file}: cannot read this landed file's Parquet footer ({err}); every run reads "
            "the landed files: land its day again (fleetledger run --date <day>) or move it aside"
        ) from None


def force_hint(source: str) -> str:
    return (
        f"if the source really holds less now, run `fleetledger run --allow-shrink {source}` "
        "for these days"
    )


@dataclass
class ShrinkGuard:
    """The guard of one `ingest_source` call (see the module docstring)."""

    source: str
    max_row_drop: float = DEFAULT_MAX_ROW_DROP
    allow: bool = False
    refused: list[str] = field(default_factory=list)

    def landed(
        self,
        home: Path,
        table: str,
        partition: str,
        quarantine_source: str | None = None,
        *,
        with_quarantine: bool = True,
    ) -> int:
        """Rows landed in `partition` of `table` plus (`with_quarantine`) its quarantined rows
        (`raw/quarantine/<quarantine_source, default the source>/<partition>/`)."""
        rows = landed_rows(partition_dir(home, table, self.source, partition))
        if not with_quarantine:
            return rows
        q = partition_dir(home, QUARANTINE_TABLE, quarantine_source or self.source, partition)
        return rows + landed_rows(q)

    def admit(
        self,
        home: Path,
        table: str,
        partition: str,
        new: int,
        report: IngestReport,
        *,
        quarantine_source: str | None = None,
        with_quarantine: bool = True,
        reason: str | None = None,
        check: str = "empty_partition",
    ) -> bool:
        """Whether `partition` of `table` may be replaced by `new` rows (landed + quarantined;
        landed only when the caller does not replace the quarantine: `with_quarantine=False`).
        `reason` says why the source holds nothing (e.g. "no files for 2026-11-02 (…)"); with it
        an empty partition is reported as a finding `check` (severity warning) either way."""
        old = self.landed(
            home, table, partition, quarantine_source, with_quarantine=with_quarantine
        )
        day = partition_day(partition)
        if new == 0 and old > 0 and not self.allow:
            why = reason or f"no rows for {partition} in {table}"
            report.warn(
                check,
                f"{why}: a gap, the landed {partition} ({old} rows) is kept",
                "warning",
                day=day,
                count=old,
            )
            return False
        if new == 0 and reason:
            report.warn(check, f"{reason}: landed an empty partition", "warning", day=day)
        drop = (old - new) / old if old else 0.0
        if drop > self.max_row_drop:
            if not self.allow:
                self.refused.append(
                    f"{table} {partition}: {new} rows would replace {old} landed "
                    f"({drop:.0%} fewer, more than max_row_drop {self.max_row_drop:g})"
                )
                return False
            report.warn(
                "shrink_allowed",
                f"--allow-shrink: {table} {partition} replaced, {old} landed rows by {new}",
                "info",
                day=day,
                count=old - new,
            )
        return True

    def refuse(self, problem: str) -> None:
        """Refuse a partition for a reason of the strategy's own (an empty billing file)."""
        self.refused.append(problem)

    def check(self) -> None:
        """Raise IngestError when any partition was refused (they keep their landed rows)."""
        if self.refused:
            raise IngestError(
                f"source {self.source}: refused to replace landed data, which is kept: "
                + "; ".join(self.refused)
                + f"; {force_hint(self.source)} (or raise max_row_drop)"
            )
