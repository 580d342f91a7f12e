"""The report of one `ingest_source` call (what landed, what was rejected, the warnings)."""

from __future__ import annotations

from dataclasses import dataclass, field


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
    warnings: list[str] = field(default_factory=list)

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
