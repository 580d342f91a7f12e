"""What a source kind is: the `KindSpec` each kind module declares (docs/adding-a-source.md).

A spec says everything the rest of the project needs to know about a kind, so nothing else
lists kinds: the config validates `sources[].kind` against the registered specs
(`ingest/kinds.py`), the Dagster ingest assets, their groups and their checks are built from
them (orchestration/ingest_assets.py, orchestration/checks.py), and a test compares the tables
they land with the dbt sources.

Only the standard library is imported here (the config imports this module through
`ingest.kinds`).
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

    from fleetledger.config import Config, Source
    from ingest.core.common import ReadResult
    from ingest.core.guards import ShrinkGuard
    from ingest.core.report import IngestReport

Group = Literal["billing", "telemetry", "scheduler"]
#: `day`: `date=YYYY-MM-DD` partitions; `period`: `period=YYYY-MM` billing periods;
#: `fetch`: one partition per fetch (a price list)
PartitionUnit = Literal["day", "period", "fetch"]
#: the landing table's quality suite: `blocking` fails the run before dbt reads the table
#: (billing), `warning` reports without holding the marts back (telemetry, scheduler)
SuiteMode = Literal["blocking", "warning"]

#: a file reader: (file, day the file was asked for or None, source, options) -> rows
FileReader = Callable[[Path, "date | None", str, dict[str, Any]], "ReadResult"]
#: a landing strategy: reads the source for the days and lands its partitions
Lander = Callable[["LandContext"], None]


@dataclass(frozen=True)
class LandContext:
    """What a landing strategy gets: the config (for `resolve`), the source, its resolved
    location, the landing table, the sorted requested days, the home, the report to fill and the
    guard that every partition replacement goes through (ingest/core/guards.py)."""

    cfg: Config
    source: Source
    spec: KindSpec
    location: str
    table: str
    days: list[date]
    home: Path
    report: IngestReport
    guard: ShrinkGuard

    @property
    def options(self) -> dict[str, Any]:
        return dict(self.source.options)


@dataclass(frozen=True)
class SourceTotals:
    """How a billing kind's own totals are read, for the reconciliation checks: `ledger` reads
    each row's (period, currency, amount) from a file independently of the mapping, `basis`
    names what is summed, `period` and `usage_day` read a landed row's billing period and the
    UTC day its usage starts."""

    ledger: Callable[[Path, dict[str, Any]], pl.DataFrame]
    basis: str
    period: Callable[[], pl.Expr]
    usage_day: Callable[[], pl.Expr]


@dataclass(frozen=True)
class KindOptions:
    """The options a kind's readers accept (docs/config.md, a table per kind); any other option
    of a source of the kind is refused when the config loads.

    - `common`: the options of every source of the kind;
    - `formats`: the values option `format` may take, each with the options only that format
      reads (empty: the kind has no `format` option); `default_format` when `format` is unset;
    - `schemes`: a location URL scheme whose reader takes other options (`bigquery://`): for such
      a location the options are `common` and the scheme's, `format` included only if listed;
    - `refused`: option names refused with their reason (credentials that belong elsewhere).
    """

    common: tuple[str, ...] = ()
    formats: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    default_format: str | None = None
    schemes: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    refused: Mapping[str, str] = field(default_factory=dict)

    def names(self) -> set[str]:
        """Every option some source of the kind may set."""
        names = set(self.common) | {n for opts in self.formats.values() for n in opts}
        names |= {n for opts in self.schemes.values() for n in opts}
        return names | ({"format"} if self.formats else set())

    def allowed(self, options: Mapping[str, Any], location: str) -> set[str]:
        """The options a source with these options and this location may set."""
        scheme = location.split("://", 1)[0] if "://" in location else None
        if scheme in self.schemes:
            return set(self.common) | set(self.schemes[scheme])
        allowed = set(self.common)
        if self.formats:
            allowed.add("format")
            allowed |= set(self.formats.get(str(options.get("format", self.default_format)), ()))
        return allowed

    def problems(self, kind: str, options: Mapping[str, Any], location: str) -> list[str]:
        """What is wrong with a source's options: an unknown `format` value, an option the kind
        refuses, an option its reader does not read (with the nearest known one)."""
        found: list[str] = []
        scheme = location.split("://", 1)[0] if "://" in location else None
        fmt = options.get("format")
        if self.formats and scheme not in self.schemes and fmt is not None:
            if str(fmt) not in self.formats:
                found.append(
                    f"option format: {kind} format {fmt!r} is not known "
                    f"(known: {', '.join(self.formats)}){_nearest(str(fmt), self.formats)}"
                )
                return found
        allowed = self.allowed(options, location)
        for name in sorted(options, key=str):
            name = str(name)
            if name in allowed:
                continue
            if name in self.refused:
                found.append(f"option {name}: {self.refused[name]}")
            elif name in self.names():
                found.append(f"option {name} is not read {self._context(name, options, location)}")
            else:
                hint = _nearest(name, self.names())
                found.append(
                    f"unknown option {name!r} for kind {kind}{hint} "
                    f"(known: {', '.join(sorted(allowed)) or 'none'})"
                )
        return found

    def _context(self, name: str, options: Mapping[str, Any], location: str) -> str:
        scheme = location.split("://", 1)[0] if "://" in location else None
        if scheme in self.schemes:
            return f"for a {scheme}:// location"
        fmt = options.get("format", self.default_format)
        readers = [f"format {f}" for f, opts in self.formats.items() if name in opts]
        readers += [f"{s}:// locations" for s, opts in self.schemes.items() if name in opts]
        return f"with format {fmt} (only with {' or '.join(readers)})"


def _nearest(name: str, known: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


@dataclass(frozen=True)
class KindSpec:
    """One source kind.

    - `tables`: every landing table the kind writes, with its columns (lineage excluded); the
      first is the main one, unless an option `format` picks another (`format_tables`);
    - `read`: the file reader (None for kinds whose `land` reads the source itself);
    - `land`: the landing strategy (`ingest/core/partitions.py` has the common ones);
    - `day`: for day-partitioned file kinds, a row's UTC day (split of whole files);
    - `suite`: the mode of the landing table's Great Expectations suite, None for no suite;
    - `totals`: how the kind's own totals are read from its files; `records_totals`: the kind
      lands them in `billing_source_totals` (the source-totals checks run on its sources);
    - `remote`: URL schemes the kind reads besides local paths;
    - `open_tables`: tables whose columns are the source's own (only lineage is fixed);
    - `unique_key`: the columns that identify a row of the main table; duplicates within a
      `{date}` partition are dropped and counted (ingest/core/duplicates.py).
    - `options`: the options its readers accept (`KindOptions`); others are config errors.
    """

    kind: str
    group: Group
    description: str
    tables: Mapping[str, list[tuple[str, pa.DataType]]]
    land: Lander
    partition: PartitionUnit = "day"
    read: FileReader | None = None
    day: Callable[[str], pl.Expr] | None = None
    format_tables: Mapping[str, str] = field(default_factory=dict)
    suite: SuiteMode | None = None
    totals: SourceTotals | None = None
    records_totals: bool = False
    remote: tuple[str, ...] = ()
    open_tables: tuple[str, ...] = ()
    unique_key: tuple[str, ...] = ()
    options: KindOptions = field(default_factory=KindOptions)

    @property
    def table(self) -> str:
        """The main landing table."""
        return next(iter(self.tables))

    def table_for(self, options: Mapping[str, Any]) -> str:
        """The landing table of a source of this kind with these options."""
        return self.format_tables.get(str(options.get("format")), self.table)

    def source_tables(self) -> set[str]:
        """Every table a source of this kind may write (dbt sources)."""
        return set(self.tables)
