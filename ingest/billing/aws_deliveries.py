"""A record of every CUR delivery landed: `raw/aws_cur_deliveries/<source>/period=YYYY-MM/`.

AWS delivers a billing period again and again (daily while it is open, and restated for weeks
after it closes). `aws_cur_lines` keeps only the latest delivery of a period (the partition is
replaced whole), so what an earlier delivery said is kept here: per delivery (manifest), its
totals by service and currency. `fct_billing_restatements` compares consecutive deliveries.

One file per delivery, named by its id (CUR 2.0 `executionId`, legacy `assemblyId`, else a hash of
the manifest's URI and version), so landing the same delivery again replaces its record instead of
adding one; `ingested_at` keeps the time it was first landed.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime
from pathlib import Path

import polars as pl

from ingest.billing.aws_cur import TOTAL_BASIS, CurDelivery, CurExport
from ingest.billing.aws_cur_files import totals_by_service
from ingest.billing.totals import TOTALS_TABLE, source_totals
from ingest.core.landing import empty_frame, land, land_record, partition_dir, polars_schema
from ingest.core.partitions import land_partition
from ingest.core.spec import LandContext

TABLE = "aws_cur_deliveries"
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]+")


def record_name(delivery_id: str) -> str:
    """A file name for a delivery id: readable, and unique even when ids differ only in
    characters a file name cannot hold."""
    digest = hashlib.sha1(delivery_id.encode()).hexdigest()[:10]
    return f"delivery-{_UNSAFE.sub('_', delivery_id)[:80]}-{digest}"


def _first_ingested(path: Path) -> datetime | None:
    if not path.is_file():
        return None
    try:
        col = pl.read_parquet(path, columns=["ingested_at"])["ingested_at"]
    except Exception:  # an unreadable old record is simply rewritten
        return None
    value = col.min() if col.len() else None
    return value if isinstance(value, datetime) else None


def delivery_frame(
    delivery: CurDelivery, source: str, ingested_at: datetime | None = None
) -> pl.DataFrame:
    """The record rows of one delivery (one per service and currency; one zero row when the
    delivery held no lines, so an emptied period still shows as a delivery)."""
    m = delivery.manifest
    totals = totals_by_service(delivery.result.rows)
    if totals.height == 0:
        totals = pl.DataFrame(
            {
                "service": [""],
                "currency": [""],
                "line_count": [0],
                "billed_cost": [0.0],
                "effective_cost": [0.0],
                "list_cost": [0.0],
            },
            schema=totals.schema,
        )
    when = ingested_at or datetime.now(UTC)
    frame = totals.with_columns(
        billing_period=pl.lit(m.period),
        delivery_id=pl.lit(delivery.delivery_id),
        format=pl.lit(m.format),
        manifest=pl.lit(m.uri),
        manifest_version=pl.lit(m.version),
        delivered_at=pl.lit(m.last_modified.astimezone(UTC)).cast(pl.Datetime("us", "UTC")),
        ingested_at=pl.lit(when.astimezone(UTC)).cast(pl.Datetime("us", "UTC")),
        x_source=pl.lit(source),
        x_source_file=pl.lit(m.uri),
        x_line_number=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
    )
    schema = polars_schema(TABLE)
    return frame.select(list(schema)).cast(dict(schema))  # type: ignore[arg-type]


def record_delivery(home: Path, source: str, delivery: CurDelivery) -> Path:
    """Write (or rewrite) the record of a landed delivery. Call it after the period's lines
    landed, so a record never describes lines that are not there."""
    partition = f"period={delivery.manifest.period}"
    name = record_name(delivery.delivery_id)
    existing = partition_dir(home, TABLE, source, partition) / f"{name}.parquet"
    frame = delivery_frame(delivery, source, _first_ingested(existing))
    return land_record(home, TABLE, source, partition, name, frame)


def cur_source_totals(
    delivery: CurDelivery,
    source: str,
    table: str = "aws_cur_lines",
    computed_at: datetime | None = None,
) -> pl.DataFrame:
    """The `billing_source_totals` rows of a delivery's period: per data file and currency, the
    rows and `line_item_unblended_cost` the files hold as read (`CurDelivery.ledger`, not the
    landed rows), and the part of them that was quarantined."""
    keys = ["x_source_file", "x_line_number"]
    ledger = delivery.ledger
    if ledger is None:
        raise ValueError("delivery has no ledger")
    quarantined = delivery.result.quarantine.select(*keys).unique().with_columns(_q=pl.lit(True))
    led = ledger.join(quarantined, on=keys, how="left").with_columns(
        _quarantined=pl.col("_q").fill_null(False)
    )
    return source_totals(
        led,
        None,
        table=table,
        source=source,
        period=delivery.manifest.period,
        basis=TOTAL_BASIS,
        computed_at=computed_at or datetime.now(UTC),
    )


def land_aws_cur(ctx: LandContext) -> None:
    """The aws_cur strategy: land each requested billing period from its latest CUR manifest
    (local folder or s3://), replacing the period whole, then record the delivery
    (`aws_cur_deliveries`). A period with no manifest is a gap (its landed lines are kept; with
    none landed it lands empty). A delivery whose data files hold no line (empty or header only)
    does not replace a period with landed lines unless the run allows it (`--allow-shrink`); nor
    does one that drops more than `max_row_drop` of them (ingest/core/guards.py). A period that
    fails to read raises before anything of it is landed."""
    source, table, home, report = ctx.source, ctx.table, ctx.home, ctx.report
    periods = sorted({d.strftime("%Y-%m") for d in ctx.days})
    export = CurExport(ctx.location, ctx.options)
    latest = export.latest()
    for period in periods:
        partition = f"period={period}"
        if period not in latest:
            empty = empty_frame(table).select("x_source", "x_source_file", "x_line_number")
            if land_partition(
                ctx,
                partition,
                empty,
                empty_frame("quarantine"),
                reason=f"no manifest for BILLING_PERIOD={period}",
                check="missing_period",
            ):
                land(home, TOTALS_TABLE, source.name, partition, empty_frame(TOTALS_TABLE))
            continue
        manifest, warnings = latest[period]
        delivery = export.read(manifest, source=source.name)
        result = delivery.result
        report.files_read.extend(result.files)
        report.warnings.extend([*warnings, *result.warnings])
        if _empty_delivery(ctx, delivery, partition):
            continue
        if not land_partition(ctx, partition, result.rows, result.quarantine):
            continue
        land(
            home,
            TOTALS_TABLE,
            source.name,
            partition,
            cur_source_totals(delivery, source.name, table),
        )
        record_delivery(home, source.name, delivery)


def _empty_delivery(ctx: LandContext, delivery: CurDelivery, partition: str) -> bool:
    """Refuse (and say so) a delivery that holds no line over a period with landed lines."""
    result = delivery.result
    if result.rows.height or result.quarantine.height or ctx.guard.allow:
        return False
    landed = ctx.guard.landed(ctx.home, ctx.table, partition)
    if not landed:
        return False
    files = ", ".join((delivery.data_files or result.files)[:5]) or "none listed"
    ctx.guard.refuse(
        f"{partition}: the delivery {delivery.manifest.uri} holds no line (its data files are "
        f"empty or a header only: {files}) while {landed} rows of the period are landed"
    )
    return True
