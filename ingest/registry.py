"""The registry of source kinds, and `ingest_source(cfg, source, days, home)`.

Every kind is a `KindSpec` (ingest/core/spec.py) declared in its domain's `kinds.py`
(ingest/billing/kinds.py, ingest/telemetry/kinds.py, ingest/scheduler/kinds.py); this module
lists them. Everything that needs to know the kinds reads them here: the config validates
`sources[].kind` (`kind_names`), the Dagster ingest assets and checks are built per spec
(orchestration/ingest_assets.py, orchestration/checks.py), and a test compares `tables()` with
the dbt sources. `register` adds a kind at run time (a plugin, or a test's fake kind).

Partitioning (docs/landing.md): telemetry and scheduler kinds land `date=YYYY-MM-DD`
partitions, billing kinds every billing period (`period=YYYY-MM`) that holds a requested day,
the Cloud Catalog one partition per fetch; each kind's `land` strategy says how.
"""

from __future__ import annotations

from datetime import date
from pathlib import Path
from typing import TYPE_CHECKING

from ingest.billing import kinds as billing_kinds
from ingest.core.errors import IngestError
from ingest.core.guards import ShrinkGuard
from ingest.core.landing import (
    recover_crashed_writes,
    register_table,
    unregister_table,
    write_schema_files,
)
from ingest.core.report import IngestReport
from ingest.core.spec import KindSpec, LandContext
from ingest.scheduler import kinds as scheduler_kinds
from ingest.telemetry import kinds as telemetry_kinds

if TYPE_CHECKING:
    from fleetledger.config import Config, Source

_SPECS: dict[str, KindSpec] = {}


def register(spec: KindSpec) -> KindSpec:
    """Add a kind (and its landing tables). Registering the same spec again is a no-op; another
    spec under a known kind name is an error."""
    known = _SPECS.get(spec.kind)
    if known is not None and known is not spec:
        raise IngestError(f"source kind {spec.kind!r} is already registered")
    for table, columns in spec.tables.items():
        register_table(table, columns, open_=table in spec.open_tables)
    _SPECS[spec.kind] = spec
    return spec


def unregister(kind: str) -> None:
    """Forget a kind added by `register` and the tables only it lands (a test's fake kind)."""
    spec = _SPECS.pop(kind, None)
    if spec is None:
        return
    still = tables()
    for table in spec.tables:
        if table not in still:
            unregister_table(table)


for _spec in (*billing_kinds.SPECS, *telemetry_kinds.SPECS, *scheduler_kinds.SPECS):
    register(_spec)


def specs() -> list[KindSpec]:
    return list(_SPECS.values())


def kind_names() -> list[str]:
    return list(_SPECS)


def spec_for(kind: str) -> KindSpec:
    try:
        return _SPECS[kind]
    except KeyError:
        raise IngestError(
            f"kind {kind!r} is not a source kind (known: {', '.join(_SPECS)})"
        ) from None


def tables() -> set[str]:
    """Every landing table some kind writes."""
    return {t for s in _SPECS.values() for t in s.tables}


def source_table(source: Source) -> str:
    """The landing table a source fills: its format's when that lands a table of its own
    (`KindSpec.format_tables`), else its kind's."""
    return spec_for(source.kind).table_for(source.options)


def ingest_source(
    cfg: Config, source: Source, days: list[date], home: Path, *, allow_shrink: bool = False
) -> IngestReport:
    """Read `source` for `days` and land its partitions under `home/raw/`. Raises IngestError
    (nothing of the failing partition is landed) when a file cannot be parsed at all, when the
    location matches no file, and when the landing guard refused a partition (it keeps its
    landed rows; the other partitions of the call are landed): a new partition that would drop
    more than `max_row_drop` of the landed rows, or a billing file emptied since it was landed
    (ingest/core/guards.py). `allow_shrink` (`fleetledger run --allow-shrink SOURCE`) lets such
    a partition replace the landed one."""
    spec = spec_for(source.kind)
    table = spec.table_for(source.options)
    home = Path(home)
    write_schema_files(home)
    report = IngestReport(source=source.name, kind=source.kind, table=table)
    for settled in recover_crashed_writes(home, source.name):
        report.warn("crashed_write", settled)
    if not days:
        report.warnings.append("no days requested: nothing landed")
        return report
    max_drop = cfg.max_row_drop if source.max_row_drop is None else source.max_row_drop
    ctx = LandContext(
        cfg=cfg,
        source=source,
        spec=spec,
        location=cfg.resolve(source.location),
        table=table,
        days=sorted(set(days)),
        home=home,
        report=report,
        guard=ShrinkGuard(source.name, max_row_drop=max_drop, allow=allow_shrink),
    )
    spec.land(ctx)
    ctx.guard.check()
    return report
