"""Issue 11, finding 10: what an ingest finds is landed as structured findings (check,
severity, count, day) for its source and Dagster run, so it reaches fct_data_health, the
console and the exit status; before, the warnings were strings only the run log saw."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
from test_ingest_registry import D1, D2, D3, build_fleet

from ingest.core.findings import IngestFinding
from ingest.core.findings_landing import (
    add_ingest_findings,
    land_ingest_findings,
    landed_quarantine_findings,
    report_findings,
)
from ingest.core.landing import land_quarantine
from ingest.registry import ingest_source


def _checks(findings: list[IngestFinding]) -> list[tuple[str, str, object, int]]:
    return sorted((f.check, f.severity, f.day, f.count) for f in findings)


def test_landing_warnings_are_findings_with_checks(tmp_path: Path) -> None:
    """The fleet of test_ingest_registry: dcgm-all holds 2 rows on D1 and 4 on D2; slurm 2 jobs
    on D1 (plus 1 rejected line), 1 on D2, none on D3."""
    cfg = build_fleet(tmp_path / "fleet")
    home = tmp_path / "home"
    ingest_source(cfg, cfg.source("dcgm-all"), [D1, D2], home)
    # D2 only: the 2 rows of D1 are not landed now; a run over D1 lands them (info)
    r = ingest_source(cfg, cfg.source("dcgm-all"), [D2], home)
    assert ("rows_outside_requested_days", "info", None, 2) in _checks(r.findings)
    r = ingest_source(cfg, cfg.source("slurm"), [D1, D2, D3], home)
    findings = report_findings(home, r)
    checks = _checks(findings)
    # D3 has no job: an empty partition is a gap (warning) of that day
    assert ("empty_partition", "warning", D3, 1) in checks
    # the rejected line is in D1's quarantine: data_loss, 1 row, naming its file and line
    lost = [f for f in findings if f.severity == "data_loss"]
    assert [(f.check, f.day, f.count) for f in lost] == [("quarantined", D1, 1)]
    assert "1 rows quarantined: " in lost[0].message and "line " in lost[0].message
    assert not [f for f in findings if f.check == "ingest_warning"]


def test_quarantine_findings_by_reason_and_day(tmp_path: Path) -> None:
    """3 rejected rows on D1 (2 for reason a, 1 for b), 1 on D2 (a) and 1 in the node-event
    quarantine of D2 (c): one data_loss finding per reason and day, counts 2, 1, 1, 1."""

    def q(reasons: list[str], file: str) -> pl.DataFrame:
        return pl.DataFrame(
            {
                "x_source": ["s"] * len(reasons),
                "x_source_file": [file] * len(reasons),
                "x_line_number": list(range(1, len(reasons) + 1)),
                "reason": reasons,
                "raw": ["x"] * len(reasons),
            }
        )

    land_quarantine(tmp_path, "s", f"date={D1}", q(["a", "b", "a"], "f1"))
    land_quarantine(tmp_path, "s", f"date={D2}", q(["a"], "f2"))
    land_quarantine(tmp_path, "s.events", f"date={D2}", q(["c"], "ev"))
    got = landed_quarantine_findings(tmp_path, "s", [f"date={D1}", f"date={D2}", f"date={D3}"])
    assert sorted((f.day, f.count, f.message) for f in got) == [
        (D1, 1, "1 rows quarantined: b (first: f1, line 2)"),
        (D1, 2, "2 rows quarantined: a (first: f1, line 1)"),
        (D2, 1, "1 rows quarantined: a (first: f2, line 1)"),
        (D2, 1, "1 rows quarantined: c (first: ev, line 1)"),
    ]
    assert {(f.check, f.severity) for f in got} == {("quarantined", "data_loss")}


def test_findings_are_replaced_per_source(tmp_path: Path) -> None:
    """A re-ingest replaces the source's findings (never duplicates them), whatever day it ran;
    other sources' findings stay."""
    one = [IngestFinding("empty_partition", "no rows", "warning", D1)]
    two = [
        IngestFinding("quarantined", "2 rows quarantined: x", "data_loss", D2, 2),
        IngestFinding("rows_outside_requested_days", "3 rows outside", "info", None, 3),
    ]
    land_ingest_findings(tmp_path, "a", "run-1", one, run_at=datetime(2026, 10, 3, tzinfo=UTC))
    land_ingest_findings(tmp_path, "b", "run-1", one, run_at=datetime(2026, 10, 3, tzinfo=UTC))
    land_ingest_findings(tmp_path, "a", "run-2", two, run_at=datetime(2026, 10, 4, tzinfo=UTC))
    land_ingest_findings(tmp_path, "a", "run-2", two, run_at=datetime(2026, 10, 4, tzinfo=UTC))
    files = sorted((tmp_path / "raw/ingest_findings").glob("*/*/*.parquet"))
    assert [f.relative_to(tmp_path / "raw/ingest_findings").as_posix() for f in files] == [
        "a/date=2026-10-04/part-0.parquet",
        "b/date=2026-10-03/part-0.parquet",
    ]
    a = pl.read_parquet(files[0])
    assert a.select("run_id", "source", "check_name", "severity", "count").rows() == [
        ("run-2", "a", "quarantined", "data_loss", 2),
        ("run-2", "a", "rows_outside_requested_days", "info", 3),
    ]
    # nothing found: an empty partition replaces the earlier findings
    land_ingest_findings(tmp_path, "a", "run-3", [], run_at=datetime(2026, 10, 5, tzinfo=UTC))
    assert pl.read_parquet(tmp_path / "raw/ingest_findings/a").height == 0


def test_a_later_step_adds_to_its_runs_findings(tmp_path: Path) -> None:
    """The dbt step reports the crashed writes it settles beside what the config step of the
    same run landed under `landing`: that run's rows stay, an earlier run's go, nothing to add
    writes nothing."""
    first = [IngestFinding("crashed_write", "t/s/date=2026-10-01: removed")]
    land_ingest_findings(tmp_path, "landing", "run-1", first)
    assert add_ingest_findings(tmp_path, "landing", "run-2", []) is None
    table = tmp_path / "raw/ingest_findings/landing"
    assert pl.read_parquet(table)["run_id"].to_list() == ["run-1"]
    # a run without a config step: run 1's finding is not run 2's
    add_ingest_findings(tmp_path, "landing", "run-2", first)
    assert pl.read_parquet(table).select("run_id", "message").rows() == [
        ("run-2", first[0].message)
    ]
    # run 2's config step found nothing (an empty partition), its dbt step two leftovers
    land_ingest_findings(tmp_path, "landing", "run-2", [])
    later = [
        IngestFinding("crashed_write", "t/s/date=2026-10-02: moved back in"),
        IngestFinding("crashed_write", "t/s/date=2026-10-03: removed"),
    ]
    add_ingest_findings(tmp_path, "landing", "run-2", later)
    rows = pl.read_parquet(table).select("run_id", "check_name", "severity", "message").rows()
    assert rows == [
        ("run-2", "crashed_write", "warning", "t/s/date=2026-10-02: moved back in"),
        ("run-2", "crashed_write", "warning", "t/s/date=2026-10-03: removed"),
    ]
    # a third step of run 2 keeps both and adds its own; run 1's row never comes back
    add_ingest_findings(tmp_path, "landing", "run-2", first)
    messages = pl.read_parquet(table)["message"].to_list()
    assert messages == [m.message for m in [*later, *first]]
