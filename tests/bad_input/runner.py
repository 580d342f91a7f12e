"""The bad-input corpus: what a case is, and the runner that executes one.

A `Case` builds its input (files and a `fleetledger.yml`) into an empty folder, names the source
it ingests and the days, and says in advance what must happen (`Expect`):

- `error`: loading the config or ingesting the source raises `ConfigError` / `IngestError`
  whose message matches every regex of `error` (the file or config key, the row or line, the
  problem); the source's landed rows are then exactly `landed` (a mistake never deletes what
  an earlier good run landed: `before`);
- `quarantine`: the bad rows are in the source's quarantine (`raw/quarantine/<source>/`), each
  with a reason matching `reason`; the good rows of the same file land (`landed`, counted by
  hand in the case); the sources in `others` land their own rows untouched;
- `dropped`: rows the source documents as "no value" (DCGM blank values) are dropped and
  counted in the report (`dropped`), nothing is quarantined;
- `flagged`: a bad row is either quarantined as for `quarantine`, or kept and named by a
  finding (not `info`) whose check or message matches `reason` (for fixes that may go
  either way, such as undecodable bytes);
- `finding`: the report carries a structured `IngestFinding` (not a plain-string warning) whose
  check or message matches `finding[0]` and whose severity is `finding[1]` (empty: any);
- `landed`: the input is valid (a boundary case): it lands `landed` rows.

Every outcome may also check `landed`, `quarantined` and `finding`. The runner goes through the
public entry points only: `fleetledger.config.load_config` on the written file, then
`ingest.registry.ingest_source` (for a `before` config first, then for the case's own).

`pending` names the issue finding a case waits for ("finding 3"): such a case is skipped with
that reason and listed as pending in the corpus summary until its fix is merged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, Literal

import polars as pl
import yaml

from fleetledger.config import ConfigError, load_config
from fleetledger.env_vars import environment
from ingest.core.errors import IngestError
from ingest.core.findings import GENERIC_CHECK, as_finding
from ingest.core.landing import QUARANTINE_TABLE
from ingest.core.report import IngestReport
from ingest.registry import ingest_source, source_table

Outcome = Literal["error", "quarantine", "flagged", "dropped", "finding", "landed"]
#: the config file a case writes, in its own folder (relative locations resolve against it)
CONFIG_NAME = "fleetledger.yml"


@dataclass(frozen=True)
class Setup:
    """What a case's `build` wrote: the config (a mapping dumped as YAML, or `raw_yaml` written
    as is), the source to ingest (None: only the config is loaded) and the days; `before`: a
    config ingested first, whose landed rows a mistake in `config` must not destroy."""

    config: dict[str, Any]
    source: str | None = None
    days: tuple[date, ...] = ()
    before: dict[str, Any] | None = None
    raw_yaml: str | None = None
    # environment variables set while the case runs (`${VAR}` references of the config)
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Expect:
    outcome: Outcome
    error: tuple[str, ...] = ()
    landed: int | None = None
    quarantined: int | None = None
    reason: str | None = None
    dropped: int | None = None
    finding: tuple[str, str] | None = None  # (check regex, severity; "" for any)
    others: dict[str, int] = field(default_factory=dict)
    # the landing table counted (default: the source's) and the quarantine read (default: the
    # source's own; slurm events are rejected under `<source>.events`)
    table: str | None = None
    quarantine_of: str | None = None
    # a further check on the case's folder after the ingest: the problem found, or None
    check: Callable[[Path], str | None] | None = None


@dataclass(frozen=True)
class Case:
    """One bad input. `kind`: the source kind it corrupts (or `config`); `name`: unique within
    the corpus; `build(folder)` writes the input and returns its `Setup`."""

    kind: str
    name: str
    build: Callable[[Path], Setup]
    expect: Expect
    pending: str | None = None

    @property
    def id(self) -> str:
        return f"{self.kind}:{self.name}"


@dataclass
class Result:
    case: Case
    handled: bool
    detail: str = ""


# ------------------------------------------------------------------------------ the landing


def landed_rows(home: Path, table: str, source: str) -> int:
    """Rows of `source` in every landed partition of `table` (hidden temp folders excluded)."""
    base = home / "raw" / table / source
    if not base.is_dir():
        return 0
    files = [
        f for p in sorted(base.iterdir()) if not p.name.startswith(".") for f in p.glob("*.parquet")
    ]
    return sum(pl.read_parquet(f).height for f in files)


def quarantined(home: Path, source: str) -> pl.DataFrame:
    base = home / "raw" / QUARANTINE_TABLE / source
    files = sorted(base.glob("*/part-0.parquet")) if base.is_dir() else []
    files = [f for f in files if not f.parent.name.startswith(".")]
    if not files:
        return pl.DataFrame({"reason": [], "x_source_file": [], "x_line_number": []})
    return pl.concat([pl.read_parquet(f) for f in files], how="diagonal_relaxed")


# ------------------------------------------------------------------------------- the runner


def _write_config(folder: Path, config: dict[str, Any], raw: str | None = None) -> Path:
    path = folder / CONFIG_NAME
    path.write_text(raw if raw is not None else yaml.safe_dump(config, sort_keys=False))
    return path


def run_ingest(
    folder: Path, config: dict[str, Any], source: str, days: tuple[date, ...]
) -> IngestReport:
    """Write `config` in `folder` and ingest `source` into `folder/home` (a case's first, good
    run, whose landed rows the case's mistake must not destroy)."""
    cfg = load_config(_write_config(folder, config))
    return ingest_source(cfg, cfg.source(source), list(days), folder / "home")


def _check(cond: bool, what: str, problems: list[str]) -> None:
    if not cond:
        problems.append(what)


def run_case(case: Case, folder: Path) -> Result:
    """Build the case in `folder` (empty), run it, and compare with its expectation."""
    folder.mkdir(parents=True, exist_ok=True)
    setup = case.build(folder)
    with environment(setup.env):
        return _run(case, setup, folder)


def _run(case: Case, setup: Setup, folder: Path) -> Result:
    exp = case.expect
    home = folder / "home"
    problems: list[str] = []
    if setup.before is not None and setup.source is not None:
        run_ingest(folder, setup.before, setup.source, setup.days)
    report: IngestReport | None = None
    error: Exception | None = None
    table: str | None = None
    try:
        cfg = load_config(_write_config(folder, setup.config, setup.raw_yaml))
        if setup.source is not None:
            source = cfg.source(setup.source)
            table = source_table(source)
            report = ingest_source(cfg, source, list(setup.days), home)
    except (ConfigError, IngestError) as err:
        error = err
    if table is None and setup.source is not None:
        table = _table_of(setup)

    if exp.outcome == "error":
        if error is None:
            problems.append("no ConfigError/IngestError was raised")
        else:
            text = str(error)
            for rx in exp.error:
                _check(re.search(rx, text) is not None, f"error {text!r} lacks /{rx}/", problems)
    elif error is not None:
        problems.append(f"unexpected {type(error).__name__}: {error}")

    findings = [as_finding(w) for w in (report.warnings if report else [])]
    if setup.source is not None and table is not None:
        n = landed_rows(home, exp.table or table, setup.source)
        q = quarantined(home, exp.quarantine_of or setup.source)
        if exp.outcome == "flagged":
            problems += _flagged(exp, n, q, findings)
        else:
            if exp.landed is not None:
                _check(n == exp.landed, f"landed {n} rows, expected {exp.landed}", problems)
            problems += _quarantine(exp, q)
    if exp.dropped is not None:
        got = report.sentinels_dropped if report is not None else None
        _check(got == exp.dropped, f"dropped {got} values, expected {exp.dropped}", problems)
    if exp.finding is not None:
        check, severity = exp.finding
        _check(
            any(
                f.check != GENERIC_CHECK
                and (re.search(check, f.check) or re.search(check, f.message))
                and severity in ("", f.severity)
                for f in findings
            ),
            f"no {severity or 'any'} finding /{check}/ in "
            f"{[(f.check, f.severity) for f in findings]}",
            problems,
        )
    for other, rows in exp.others.items():
        cfg = load_config(folder / CONFIG_NAME)
        src = cfg.source(other)
        ingest_source(cfg, src, list(setup.days), home)
        n = landed_rows(home, source_table(src), other)
        _check(n == rows, f"other source {other} landed {n} rows, expected {rows}", problems)
    if exp.check is not None and (problem := exp.check(folder)) is not None:
        problems.append(problem)
    return Result(case, not problems, "; ".join(problems))


def _quarantine(exp: Expect, q: pl.DataFrame) -> list[str]:
    problems: list[str] = []
    if exp.quarantined is not None:
        _check(
            q.height == exp.quarantined,
            f"quarantined {q.height} rows, expected {exp.quarantined}",
            problems,
        )
    if exp.reason is not None:
        if q.height == 0:
            problems.append(f"no quarantined row to match /{exp.reason}/")
        bad = [r for r in q["reason"].to_list() if not re.search(exp.reason, str(r))]
        _check(not bad, f"quarantine reasons {bad[:3]} lack /{exp.reason}/", problems)
    return problems


def _flagged(exp: Expect, landed: int, q: pl.DataFrame, findings: list[Any]) -> list[str]:
    """Quarantined as expected, or landed whole and named by a finding that is not `info`."""
    as_quarantine = _quarantine(exp, q)
    if exp.landed is not None and landed != exp.landed:
        as_quarantine.append(f"landed {landed} rows, expected {exp.landed}")
    if not as_quarantine:
        return []
    rx = exp.reason or "."
    named = any(
        f.severity != "info" and (re.search(rx, f.check) or re.search(rx, f.message))
        for f in findings
    )
    whole = (exp.landed or 0) + (exp.quarantined or 0)
    if named and landed == whole:
        return []
    return [
        "neither quarantined (" + "; ".join(as_quarantine) + ") nor landed whole "
        f"({landed} of {whole}) with a finding /{rx}/"
    ]


def _table_of(setup: Setup) -> str | None:
    """The landing table of the case's source, read from the config mapping (the config itself
    may fail to load)."""
    from fleetledger.config import Source

    for s in setup.config.get("sources", []):
        if s.get("name") == setup.source:
            try:
                return source_table(Source.model_validate(s))
            except Exception:
                return None
    return None
