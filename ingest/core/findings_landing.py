"""Land what an ingest found, so it reaches `fct_data_health` (DESIGN.md, "Data health").

The ingest asset of a source calls `land_ingest_findings` after `ingest_source`: every finding of
the report (plain-string warnings as check `ingest_warning`) plus the rows that source's landed
quarantine partitions hold for the partitions just written, one `data_loss` finding per reason
and day (`quarantine_findings`). They are written to
`raw/ingest_findings/<source>/date=<run day>/part-0.parquet` with the Dagster run id; the
source's earlier findings are removed, so a re-run replaces them and never duplicates them (the
findings of published runs are kept in `raw/data_health_log/`). dbt reads the rows of its own
run (`stg_pipeline__ingest_findings`, `int_data_health_findings`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ingest.core.findings import IngestFinding, quarantine_findings
from ingest.core.landing import (
    QUARANTINE_TABLE,
    land,
    landed_partitions,
    partition_day,
    partition_dir,
    polars_schema,
)
from ingest.core.report import IngestReport

#: the findings "sources" of the run itself, beside the configured sources' own: `config` (what
#: loading the config found, orchestration/config_assets.py), `build` (the day models' file set
#: aside, fleetledger/incremental.py) and `landing` (crashed writes settled before the build,
#: orchestration/config_assets.py). Each replaces its findings on every run, so no configured
#: source may take one of these names (fleetledger/config.py refuses it).
CONFIG_FINDINGS_SOURCE = "config"
BUILD_FINDINGS_SOURCE = "build"
LANDING_FINDINGS_SOURCE = "landing"
RESERVED_SOURCE_NAMES = (BUILD_FINDINGS_SOURCE, CONFIG_FINDINGS_SOURCE, LANDING_FINDINGS_SOURCE)

INGEST_FINDINGS_TABLE = "ingest_findings"
#: quarantine folders of a source besides its own: `<source>.events` (slurm node events)
_QUARANTINE_SUFFIXES = ("", ".events")


def landed_quarantine_findings(
    home: Path, source: str, partitions: Iterable[str]
) -> list[IngestFinding]:
    """`data_loss` findings for the rows the source's quarantine holds in `partitions` (one per
    reason and partition, naming the first file and line)."""
    out: list[IngestFinding] = []
    for partition in dict.fromkeys(partitions):
        files = [
            f
            for suffix in _QUARANTINE_SUFFIXES
            for f in sorted(
                partition_dir(home, QUARANTINE_TABLE, f"{source}{suffix}", partition).glob(
                    "*.parquet"
                )
            )
        ]
        if not files:
            continue
        q = pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")
        out.extend(quarantine_findings(q, partition_day(partition)))
    return out


def report_findings(home: Path, report: IngestReport) -> list[IngestFinding]:
    """Every finding of an ingest: the report's, then its quarantined rows by reason."""
    return [*report.findings, *landed_quarantine_findings(home, report.source, report.partitions)]


def findings_frame(
    findings: Iterable[IngestFinding],
    *,
    source: str,
    run_id: str,
    run_at: datetime,
    location: str | None = None,
) -> pl.DataFrame:
    """The findings as rows of `ingest_findings`."""
    items = list(findings)
    n = len(items)
    return pl.DataFrame(
        {
            "run_id": [run_id] * n,
            "run_at": [run_at] * n,
            "source": [source] * n,
            "day": [f.day for f in items],
            "check_name": [f.check for f in items],
            "severity": [f.severity for f in items],
            "count": [f.count for f in items],
            "message": [f.message for f in items],
            "x_source": [source] * n,
            "x_source_file": [location] * n,
            "x_line_number": [None] * n,
        },
        schema=polars_schema(INGEST_FINDINGS_TABLE),
    )


def land_ingest_findings(
    home: Path,
    source: str,
    run_id: str,
    findings: Iterable[IngestFinding],
    *,
    location: str | None = None,
    run_at: datetime | None = None,
) -> Path:
    """Replace the source's landed findings with `findings` of run `run_id` (an empty list
    lands an empty partition: the source found nothing this time). Returns the file written."""
    run_at = run_at or datetime.now(UTC)
    frame = findings_frame(findings, source=source, run_id=run_id, run_at=run_at, location=location)
    return _replace_findings(home, source, frame, run_at)


def add_ingest_findings(
    home: Path, source: str, run_id: str, findings: Iterable[IngestFinding]
) -> Path | None:
    """Add `findings` to those run `run_id` landed for `source` already (a later step of the
    same run: the dbt step after the config step), keeping that run's earlier rows and dropping
    an earlier run's. Nothing to add writes nothing. Returns the file written."""
    items = list(findings)
    if not items:
        return None
    run_at = datetime.now(UTC)
    frame = findings_frame(items, source=source, run_id=run_id, run_at=run_at)
    landed = [
        partition_dir(home, INGEST_FINDINGS_TABLE, source, p) / "part-0.parquet"
        for p in landed_partitions(home, INGEST_FINDINGS_TABLE, source)
    ]
    if landed:
        earlier = pl.concat([pl.read_parquet(f) for f in landed], how="diagonal_relaxed")
        earlier = earlier.filter(pl.col("run_id") == run_id).select(frame.columns)
        frame = pl.concat([earlier.cast(frame.schema), frame])
    return _replace_findings(home, source, frame, run_at)


def _replace_findings(home: Path, source: str, frame: pl.DataFrame, run_at: datetime) -> Path:
    """Land `frame` as the source's one findings partition (the day of `run_at`)."""
    partition = f"date={run_at.date().isoformat()}"
    written = land(home, INGEST_FINDINGS_TABLE, source, partition, frame)
    # one partition per source: the findings of its earlier ingests are replaced
    for old in written.parent.parent.glob("date=*"):
        if old != written.parent and old.is_dir():
            shutil.rmtree(old, ignore_errors=True)
    return written
