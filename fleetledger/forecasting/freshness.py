"""Where each forecast series ends, and the days missing inside it (docs/forecasts.md, "Data
freshness").

A series is fed by feeds, each with the days it delivered:

- `accounted`: the accounted days (fct_ops_daily, else the marts' days); feeds every series;
- `billing:<source>`: each billing source of fct_billing, the UTC days its daily-or-finer lines
  (ChargePeriodEnd - ChargePeriodStart <= 1 day) start on; feeds `spend` (monthly fees, tax
  and credits cover whole periods and say nothing about how far a delivery reached);
- `telemetry:<site>`: each site's days with any GPU-second a DCGM sample covered (fct_gpu_hours:
  `unobserved_seconds` < 3600 in some hour); feeds `gpu_hours` and `peak_gpus`.

A series ends at the last day every one of its feeds delivered (a CUR a day behind ends the
spend series a day early, instead of a day of 0 spend pulling the forecast down). A feed more
than `forecast.max_feed_lag_days` behind the last accounted day is not waited for (a source
that stopped, not one that lags): `forecast_feed_stale:<feed>`. A day inside a series that one
of its feeds did not deliver (after that feed's first day) is a gap: `forecast_gap:<series>`
names the series, the feeds and the days; the day stays in the series as the marts hold it
(0 where nothing landed).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import duckdb
import polars as pl

from fleetledger.forecasting.notes import ForecastNote

FEED_SCHEMA = {"feed": pl.Utf8, "series": pl.Utf8, "day": pl.Date}
#: the series each kind of feed feeds
FEEDS_OF = {"billing": ("spend",), "telemetry": ("gpu_hours", "peak_gpus")}
ALL_SERIES = ("spend", "gpu_hours", "peak_gpus")

_UTC_DAY = "cast(epoch_ms(cast(epoch({col}) * 1000 as bigint)) as date)"

BILLING_FEEDS_SQL = f"""
select distinct 'billing:' || x_source as feed, {_UTC_DAY.format(col='"ChargePeriodStart"')} as day
from main.fct_billing
where x_source is not null
  and "ChargePeriodEnd" is not null
  and epoch("ChargePeriodEnd") - epoch("ChargePeriodStart") <= 86400
"""

TELEMETRY_FEEDS_SQL = f"""
select distinct 'telemetry:' || site as feed, {_UTC_DAY.format(col="hour")} as day
from main.fct_gpu_hours
where site is not null and unobserved_seconds < 3600
"""


@dataclass
class SeriesEnds:
    """The last day of each series kind, and what the trim and the gaps tell the run."""

    ends: dict[str, date]
    notes: list[ForecastNote] = field(default_factory=list)


def _feed_rows(con: duckdb.DuckDBPyConnection, sql: str, kind: str) -> pl.DataFrame:
    df = pl.from_arrow(con.sql(sql).to_arrow_table())
    assert isinstance(df, pl.DataFrame)
    if df.height == 0:
        return pl.DataFrame(schema=FEED_SCHEMA)
    series = pl.DataFrame({"series": list(FEEDS_OF[kind])})
    return (
        df.select(pl.col("feed").cast(pl.Utf8), pl.col("day").cast(pl.Date))
        .join(series, how="cross")
        .select(list(FEED_SCHEMA))
    )


def read_feeds(
    con: duckdb.DuckDBPyConnection, tables: set[str], accounted: list[date]
) -> pl.DataFrame:
    """(feed, series, day) for every day each feed delivered, from the warehouse's marts."""
    parts = [
        pl.DataFrame(
            {
                "feed": ["accounted"] * len(accounted) * len(ALL_SERIES),
                "series": [s for s in ALL_SERIES for _ in accounted],
                "day": accounted * len(ALL_SERIES),
            },
            schema=FEED_SCHEMA,
        )
    ]
    if "fct_billing" in tables:
        parts.append(_feed_rows(con, BILLING_FEEDS_SQL, "billing"))
    if "fct_gpu_hours" in tables:
        parts.append(_feed_rows(con, TELEMETRY_FEEDS_SQL, "telemetry"))
    return pl.concat(parts)


def _days(days: list[date], limit: int = 8) -> str:
    text = ", ".join(d.isoformat() for d in days[:limit])
    return text + (f" and {len(days) - limit} more" if len(days) > limit else "")


def series_ends(
    raw: pl.DataFrame, feeds: pl.DataFrame, last_day: date, max_lag_days: int
) -> SeriesEnds:
    """Where each series kind of `raw` (series, scope, day, y: the rows the marts hold) ends,
    given the days its feeds delivered (`feeds`: feed, series, day), and the gaps inside it."""
    notes: list[ForecastNote] = []
    ends: dict[str, date] = {}
    feeds = feeds.filter(pl.col("day") <= last_day)
    stale_said: set[str] = set()
    for series in sorted(raw["series"].unique().to_list()):
        mine = feeds.filter(pl.col("series") == series)
        span = mine.group_by("feed").agg(
            pl.col("day").min().alias("first"), pl.col("day").max().alias("last")
        )
        waited, stale = [], []
        for feed, _first, last in span.sort("feed").iter_rows():
            lag = (last_day - last).days
            (stale if lag > max_lag_days else waited).append((feed, last))
        for feed, last in stale:
            if feed not in stale_said:
                stale_said.add(feed)
                notes.append(
                    ForecastNote(
                        f"forecast_feed_stale:{feed}",
                        "warning",
                        f"{feed} delivered nothing after {last} ({(last_day - last).days} "
                        f"days before the last accounted day {last_day}, over "
                        f"forecast.max_feed_lag_days {max_lag_days}): the forecasts do not "
                        "wait for it; its missing days are gaps",
                    )
                )
        end = min([last for _f, last in waited], default=last_day)
        ends[series] = end
        behind = sorted(f"{f} through {last}" for f, last in waited if last < last_day)
        if end < last_day:
            notes.append(
                ForecastNote(
                    f"forecast_data_through:{series}",
                    "info",
                    f"the {series} series end at {end}, the last day every feed delivered "
                    f"({', '.join(behind)}; the last accounted day is {last_day}): the days "
                    "after it are forecast, not counted as 0",
                    count=(last_day - end).days,
                )
            )
        first = raw.filter(pl.col("series") == series)["day"].min()
        assert isinstance(first, date)
        gaps = _gaps(mine, span, first, end)
        if gaps.height:
            scopes = sorted(raw.filter(pl.col("series") == series)["scope"].unique().to_list())
            days = sorted(gaps["day"].unique().to_list())
            by_feed = "; ".join(
                f"{feed}: {_days(sorted(d))}"
                for feed, d in gaps.group_by("feed").agg(pl.col("day")).sort("feed").iter_rows()
            )
            notes.append(
                ForecastNote(
                    f"forecast_gap:{series}",
                    "warning",
                    f"{len(days)} day(s) inside the {series} series ({len(scopes)} scopes: "
                    f"{', '.join(scopes[:5])}{', ...' if len(scopes) > 5 else ''}) were not "
                    f"delivered ({by_feed}): they count as 0 in the forecast history; "
                    "re-land the source for those days",
                    count=len(days),
                )
            )
    return SeriesEnds(ends, notes)


def _gaps(mine: pl.DataFrame, span: pl.DataFrame, first: date, end: date) -> pl.DataFrame:
    """(feed, day): the days from a feed's first day (and the series' first) through `end`
    the feed did not deliver."""
    if end < first or span.height == 0:
        return pl.DataFrame(schema={"feed": pl.Utf8, "day": pl.Date})
    grid = span.with_columns(
        pl.date_ranges(
            pl.max_horizontal(pl.col("first"), pl.lit(first)),
            pl.lit(end),
            interval="1d",
        ).alias("day")
    ).explode("day")
    return (
        grid.filter(pl.col("day").is_not_null())
        .select("feed", "day")
        .join(mine.select("feed", "day"), on=["feed", "day"], how="anti")
        .sort("feed", "day")
    )


def trim(frame: pl.DataFrame, ends: dict[str, date]) -> pl.DataFrame:
    """The rows of `frame` (series, scope, day, ...) on or before their series' end."""
    if not ends:
        return frame
    limits = pl.DataFrame({"series": list(ends), "_end": list(ends.values())})
    return (
        frame.join(limits, on="series", how="left")
        .filter(pl.col("_end").is_null() | (pl.col("day") <= pl.col("_end")))
        .drop("_end")
    )
