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

from collections.abc import Callable, Mapping
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
    - `open_tables`: tables whose columns are the source's own (only lineage is fixed).
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
