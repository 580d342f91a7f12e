"""The one partitioning scheme every fleetledger asset shares: UTC days, from the config's
`partitions_start` (default 2024-01-01) to today."""

from __future__ import annotations

from datetime import date, timedelta
from functools import cache

from dagster import BackfillPolicy, DailyPartitionsDefinition

from fleetledger.config import DEFAULT_PARTITIONS_START, Config

PARTITIONS_START = DEFAULT_PARTITIONS_START.isoformat()


@cache
def daily_partitions(start: str = PARTITIONS_START) -> DailyPartitionsDefinition:
    """Daily UTC partitions from `start` (YYYY-MM-DD). end_offset=1: today's (partial)
    partition exists too, so `fleetledger run --date <today>` works; the daily schedule still
    materialises yesterday. Cached, so every asset of a code location shares one definition."""
    return DailyPartitionsDefinition(start_date=start, timezone="UTC", end_offset=1)


def partitions_for(cfg: Config | None) -> DailyPartitionsDefinition:
    """The partitions of a home: from its config's `partitions_start`, else the default."""
    return daily_partitions(cfg.partitions_start.isoformat() if cfg else PARTITIONS_START)


def first_day(partitions: DailyPartitionsDefinition) -> date:
    return partitions.start.date()


DAILY = daily_partitions()

# a date range is one run with one dbt build over the whole range
SINGLE_RUN = BackfillPolicy.single_run()


def days_in_range(first_key: str, last_key: str) -> list[date]:
    """Every day from `first_key` to `last_key` (partition keys, inclusive)."""
    first, last = date.fromisoformat(first_key), date.fromisoformat(last_key)
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]
