"""Data health (DESIGN.md, "Data health"): what each run found, kept across runs.

dbt builds `fct_data_health` from this build's findings (`int_data_health_findings`: telemetry
gaps, DCGM hosts outside the inventory, bill lines matching no node, marts that cannot be
computed) stamped with the run (dbt vars `run_id`, `run_at`), plus the findings of earlier runs.
After a published build, `record_run_findings` appends this run's rows to
`raw/data_health_log/pipeline/date=<run day>/<run id>.parquet`, so they survive the next build
and full refreshes; `run_findings` reads them back for the console summary.

The ingest assets land what each source's ingest found (raw/ingest_findings/, ingest core
findings_landing.py); dbt adds this run's to the same mart. `summary` counts a run's findings by
source, severity and check (the console table); `blocking_findings` are those that make
`fleetledger run` exit with status 3 (`data_loss`, unless `--accept-warnings`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

from ingest.core.landing import land_record

LOG_TABLE = "data_health_log"
SEVERITY_ORDER = ("error", "data_loss", "warning", "info")
#: checks that never count towards the exit status (DESIGN.md: alert delivery failures)
NOT_COUNTED_PREFIXES = ("alert_delivery",)
_SAFE = re.compile(r"[^A-Za-z0-9_.-]")


@dataclass(frozen=True)
class Finding:
    source: str
    day: date | None
    check: str
    severity: str
    count: int
    message: str

    def __str__(self) -> str:
        day = f" {self.day}" if self.day else ""
        return f"{self.severity}: [{self.source}{day}] {self.message}"


def check_base(check: str) -> str:
    """A check without its subject: `telemetry_gap:dgx-04` → `telemetry_gap`."""
    return check.split(":", 1)[0]


def counts(finding: Finding) -> bool:
    """Whether a finding counts towards the run's exit status."""
    return not check_base(finding.check).startswith(NOT_COUNTED_PREFIXES)


def blocking_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The `data_loss` findings that make a run exit with status 3 (unless accepted)."""
    return [f for f in findings if f.severity == "data_loss" and counts(f)]


def error_findings(findings: Iterable[Finding]) -> list[Finding]:
    """The `error` findings (a source could not be read): the run fails whatever is accepted."""
    return [f for f in findings if f.severity == "error" and counts(f)]


@dataclass(frozen=True)
class SummaryRow:
    source: str
    severity: str
    check: str
    findings: int
    count: int


def summary(findings: Iterable[Finding]) -> list[SummaryRow]:
    """Findings grouped by source, severity and check (without its subject), gravest first."""
    groups: dict[tuple[str, str, str], list[Finding]] = {}
    for f in findings:
        groups.setdefault((f.source, f.severity, check_base(f.check)), []).append(f)
    rows = [
        SummaryRow(src, sev, check, len(items), sum(int(i.count or 0) for i in items))
        for (src, sev, check), items in groups.items()
    ]
    rank = {s: i for i, s in enumerate(SEVERITY_ORDER)}
    return sorted(rows, key=lambda r: (rank.get(r.severity, len(rank)), r.source, r.check))


def _frame(warehouse: Path, run_id: str) -> pl.DataFrame:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        tables = {
            r[0] for r in con.execute("select table_name from information_schema.tables").fetchall()
        }
        if "fct_data_health" not in tables:
            return pl.DataFrame()
        arrow = con.sql(
            'select run_at, run_id, source, day, "check" as check_name, severity, count, '
            "message from fct_data_health where run_id = ? order by severity, source, day, "
            '"check"',
            params=[run_id],
        ).to_arrow_table()
        return pl.from_arrow(arrow)
    finally:
        con.close()


def run_findings(warehouse: Path, run_id: str) -> list[Finding]:
    """The findings of run `run_id` in a warehouse (the published one after a run)."""
    df = _frame(warehouse, run_id)
    return [
        Finding(r["source"], r["day"], r["check_name"], r["severity"], r["count"], r["message"])
        for r in df.iter_rows(named=True)
    ]


def record_run_findings(home: Path, warehouse: Path, run_id: str, day: date) -> Path | None:
    """Append run `run_id`'s findings to the log in the landing zone (written once per run:
    recording the same run again replaces its file, never duplicates it)."""
    df = _frame(warehouse, run_id)
    if df.height == 0:
        return None
    df = df.with_columns(
        pl.col("run_at").cast(pl.Datetime("us", "UTC")),
        pl.col("count").cast(pl.Int64),
        x_source=pl.lit("pipeline"),
        x_source_file=pl.lit("fct_data_health"),
        x_line_number=pl.lit(None, pl.Int64),
    )
    name = _SAFE.sub("_", run_id)
    return land_record(home, LOG_TABLE, "pipeline", f"date={day}", name, df)
