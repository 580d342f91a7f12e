"""The report of one `ingest_source` call (what landed, what was rejected, the warnings)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

from ingest.core.findings import IngestFinding, Warning_, as_finding


@dataclass
class IngestReport:
    """What one `ingest_source` call did: partitions written (`date=…` / `period=…`), rows
    landed and quarantined, DCGM blank values dropped, files read, and warnings (empty
    partitions, rows outside the requested days, ...)."""

    source: str
    kind: str
    table: str
    partitions: list[str] = field(default_factory=list)
    rows_landed: int = 0
    rows_quarantined: int = 0
    sentinels_dropped: int = 0
    node_events_landed: int = 0  # slurm with option `events`: rows in `slurm_node_events`
    files_read: list[str] = field(default_factory=list)
    # plain strings or IngestFinding (ingest/core/findings.py); `findings` reads both
    warnings: list[Warning_] = field(default_factory=list)

    def warn(
        self,
        check: str,
        message: str,
        severity: str = "warning",
        *,
        day: date | None = None,
        count: int = 1,
    ) -> IngestFinding:
        """Record a finding (see ingest/core/findings.py for the severities)."""
        finding = IngestFinding(check, message, severity, day, count)
        self.warnings.append(finding)
        return finding

    @property
    def findings(self) -> list[IngestFinding]:
        return [as_finding(w) for w in self.warnings]

    def summary(self) -> str:
        return (
            f"{self.source} ({self.kind} → {self.table}): {self.rows_landed} rows in "
            f"{len(self.partitions)} partitions, {self.rows_quarantined} quarantined, "
            f"{len(self.files_read)} files"
            + (
                f", {self.sentinels_dropped} DCGM blank values dropped"
                if self.sentinels_dropped
                else ""
            )
        )
