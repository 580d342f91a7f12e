"""What a reader or a landing strategy tells the user besides rows: structured findings.

Every warning an ingest raises is an `IngestFinding` (a plain string is accepted and read as a
`warning` with check `ingest_warning`). The ingest asset lands them per source in
`raw/ingest_findings/` with the run's id, and dbt adds them to `fct_data_health` (DESIGN.md,
"Data health"), so the console summary, the data-health view and the run's exit status all see
the same list.

Severities, from mild to grave:
- `info`: worth knowing, nothing lost (a documented DCGM blank value dropped);
- `warning`: the numbers may be incomplete (a `{date}` day with no file: a gap);
- `data_loss`: rows the source holds are in no mart (quarantined, not landed, dropped);
- `error`: a source could not be read at all (its landed data stays).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date

import polars as pl

SEVERITIES = ("info", "warning", "data_loss", "error")
#: the check name of a warning given as a plain string
GENERIC_CHECK = "ingest_warning"


@dataclass(frozen=True)
class IngestFinding:
    """One thing an ingest found: `check` is a stable name (`quarantined`, `empty_partition`,
    ...), `count` what it counts (rows, files, samples), `day` the partition day when known."""

    check: str
    message: str
    severity: str = "warning"
    day: date | None = None
    count: int = 1

    def __post_init__(self) -> None:
        if self.severity not in SEVERITIES:
            raise ValueError(f"severity must be one of {', '.join(SEVERITIES)}: {self.severity!r}")

    def __str__(self) -> str:
        return self.message


Warning_ = str | IngestFinding


def as_finding(warning: Warning_) -> IngestFinding:
    """A finding from a warning (a plain string is a generic `warning`)."""
    if isinstance(warning, IngestFinding):
        return warning
    return IngestFinding(GENERIC_CHECK, str(warning))


def quarantine_findings(
    quarantine: pl.DataFrame, day: date | None = None, *, limit: int = 20
) -> list[IngestFinding]:
    """`data_loss` findings for rejected rows, one per reason (the `limit` commonest, the rest
    summed in one), each naming the first file and line that carry it."""
    if quarantine.height == 0:
        return []
    by_reason = (
        quarantine.group_by("reason")
        .agg(
            pl.len().alias("n"),
            pl.col("x_source_file").first().alias("file"),
            pl.col("x_line_number").first().alias("line"),
        )
        .sort(["n", "reason"], descending=[True, False])
    )
    out: list[IngestFinding] = []
    for reason, n, file, line in by_reason.head(limit).iter_rows():
        where = f"{file}" + (f", line {line}" if line is not None else "")
        out.append(
            IngestFinding(
                "quarantined",
                f"{n} rows quarantined: {reason} (first: {where})",
                "data_loss",
                day,
                int(n),
            )
        )
    rest = by_reason.slice(limit)
    if rest.height:
        n = int(rest["n"].sum())
        out.append(
            IngestFinding(
                "quarantined",
                f"{n} rows quarantined for {rest.height} other reasons",
                "data_loss",
                day,
                n,
            )
        )
    return out


def worst(findings: Iterable[Warning_]) -> str | None:
    """The gravest severity among `findings` (None when there are none)."""
    ranks = [SEVERITIES.index(as_finding(f).severity) for f in findings]
    return SEVERITIES[max(ranks)] if ranks else None
