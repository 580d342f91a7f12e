"""The one partitioning scheme every fleetledger asset shares: UTC days."""

from __future__ import annotations

from datetime import date, timedelta

from dagster import BackfillPolicy, DailyPartitionsDefinition

PARTITIONS_START = "2024-01-01"

# end_offset=1: today's (partial) partition exists too, so `fleetledger run --date <today>` works;
# the daily schedule still materialises yesterday.
DAILY = DailyPartitionsDefinition(start_date=PARTITIONS_START, timezone="UTC", end_offset=1)

# a date range is one run with one dbt build over the whole range
SINGLE_RUN = BackfillPolicy.single_run()


def days_in_range(first_key: str, last_key: str) -> list[date]:
    """Every day from `first_key` to `last_key` (partition keys, inclusive)."""
    first, last = date.fromisoformat(first_key), date.fromisoformat(last_key)
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]
