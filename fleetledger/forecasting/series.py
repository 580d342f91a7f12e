"""The daily series the forecasts are made of, read from the marts with DuckDB SQL.

Each series is (series, scope, day, y) on every day from its first row in the source mart
through the last day every feed of it delivered (freshness.py; at most the warehouse's last
accounted day), missing days filled with 0 (nothing was spent or held that day; the days a
feed did not deliver are reported as `forecast_gap`); docs/forecasts.md defines each series
and scope:

- `spend` (fct_daily_spend.cost: EffectiveCost in the reporting currency): `total`, `team:<t>`
  (the team's direct run cost + its attributed bill lines), `team:<t>+shared_idle` (plus its
  shared idle cost; for teams with an `include_shared_idle` budget), `provider:<p>`,
  `service:<s>`; `sub_account:<id>` from fct_sub_account_daily_spend;
- `gpu_hours` (held: busy + allocated-idle seconds / 3600): `total` from fct_gpu_hours,
  `team:<t>` from fct_team_gpu_hours_daily;
- `peak_gpus` (the day's peak concurrent GPU demand): `total` and `site:<s>` (`peak_gpus_sql`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import duckdb
import polars as pl

from fleetledger.forecasting.freshness import read_feeds, series_ends, trim
from fleetledger.forecasting.notes import ForecastNote

SERIES = ("spend", "gpu_hours", "peak_gpus")
#: what each series counts (the `unit` column of fct_forecast; spend is in the currency)
UNITS = {"gpu_hours": "gpu_hours", "peak_gpus": "gpus"}
SCHEMA = {"series": pl.Utf8, "scope": pl.Utf8, "day": pl.Date, "y": pl.Float64}


@dataclass(frozen=True)
class SeriesRequest:
    """Scopes the config asks for whether or not the marts hold rows for them: budget teams
    (a zero series when the team spent nothing), and the teams whose budget counts shared
    idle (`team:<t>+shared_idle`)."""

    teams: tuple[str, ...] = ()
    shared_idle_teams: tuple[str, ...] = ()
    providers: tuple[str, ...] = ()
    sub_accounts: tuple[str, ...] = ()


@dataclass
class FleetSeries:
    """The long frame of every series, the last accounted day, and the reporting currency."""

    frame: pl.DataFrame
    last_day: date | None
    currency: str
    tables: set[str] = field(default_factory=set)
    #: the last day of each series kind (freshness.py: where every feed delivered)
    ends: dict[str, date] = field(default_factory=dict)
    notes: list[ForecastNote] = field(default_factory=list)


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_schema = 'main'"
    ).fetchall()
    return {r[0] for r in rows}


def _frame(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pl.DataFrame:
    df = pl.from_arrow(con.sql(sql, params=params or []).to_arrow_table())
    assert isinstance(df, pl.DataFrame)
    if df.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    return df.select(
        pl.col("series").cast(pl.Utf8),
        pl.col("scope").cast(pl.Utf8),
        pl.col("day").cast(pl.Date),
        pl.col("y").cast(pl.Float64),
    )


#: spend per day for every scope of fct_daily_spend; parameters: the budget teams (kept even
#: when they spent nothing), the teams whose `+shared_idle` series is wanted. A team with only
#: zero-cost rows on a day (`unshared`, which holds shared idle only) has no row that day.
SPEND_SQL = """
    with spend as (select day, team, provider, service, cost, shared_idle_cost
                   from main.fct_daily_spend)
    select 'spend' as series, 'total' as scope, day, sum(cost) as y from spend group by day
    union all
    select 'spend', 'team:' || team, day, sum(cost) from spend
    where team is not null group by team, day
    having sum(abs(cost)) > 0 or team in (select unnest(?::varchar[]))
    union all
    select 'spend', 'team:' || team || '+shared_idle', day, sum(cost + shared_idle_cost)
    from spend where team in (select unnest(?::varchar[])) group by team, day
    union all
    select 'spend', 'provider:' || provider, day, sum(cost) from spend
    where provider is not null group by provider, day
    union all
    select 'spend', 'service:' || service, day, sum(cost) from spend
    where service is not null group by service, day
"""


SUB_ACCOUNT_SQL = """
select 'spend' as series, 'sub_account:' || sub_account as scope, day, sum(cost) as y
from main.fct_sub_account_daily_spend where sub_account is not null group by sub_account, day
"""

GPU_HOURS_TOTAL_SQL = """
select 'gpu_hours' as series, 'total' as scope, cast(hour as date) as day,
       sum(busy_seconds + allocated_idle_seconds) / 3600.0 as y
from main.fct_gpu_hours group by cast(hour as date)
"""

GPU_HOURS_TEAM_SQL = """
select 'gpu_hours' as series, 'team:' || team as scope, day,
       sum(busy_gpu_hours + allocated_idle_gpu_hours) as y
from main.fct_team_gpu_hours_daily where team is not null group by team, day
"""


def peak_gpus_sql(with_runs: bool) -> str:
    """The day's peak concurrent GPU demand, per site and in total: the maximum over the day's
    hours of the GPU-equivalents held in the hour (busy + allocated-idle seconds of fct_gpu_hours
    / 3600: the mean number of GPUs runs held then) plus the GPU-equivalents of the runs pending
    at the hour's end (fct_runs: submitted before it, not started and not ended by then). A
    pending run counts at its cluster's site when the inventory (dim_nodes) puts all of that
    cluster's nodes at one site; otherwise it counts in the total only."""
    pending = (
        """
    pending_runs as (
        select r.submitted_at, r.started_at, r.ended_at,
               coalesce(r.gpu_equivalents, r.gpus, 0) as gpus, cs.site
        from main.fct_runs r
        left join (select cluster, min(site) as site from main.dim_nodes
                   where cluster is not null group by cluster
                   having count(distinct site) = 1) cs on cs.cluster = r.cluster
        where r.submitted_at is not null
          and (r.started_at is null or r.started_at > r.submitted_at)
    ),
    pending as (
        select h.hour, p.site, sum(p.gpus) as gpus
        from (select distinct hour from held) h
        inner join pending_runs p
            on p.submitted_at < h.hour + interval 1 hour
            and (p.started_at is null or p.started_at >= h.hour + interval 1 hour)
            and (p.ended_at is null or p.ended_at >= h.hour + interval 1 hour)
        group by h.hour, p.site
    ),"""
        if with_runs
        else """
    pending as (select cast(null as timestamptz) as hour, cast(null as varchar) as site,
                       0.0 as gpus where false),"""
    )
    return f"""
    with held as (
        select hour, site, sum(busy_seconds + allocated_idle_seconds) / 3600.0 as gpus
        from main.fct_gpu_hours group by hour, site
    ),{pending}
    site_hours as (
        select h.hour, h.site, h.gpus + coalesce(p.gpus, 0) as demand
        from held h left join pending p on p.hour = h.hour and p.site = h.site
        where h.site is not null
    ),
    total_hours as (
        select h.hour, h.gpus + coalesce(p.gpus, 0) as demand
        from (select hour, sum(gpus) as gpus from held group by hour) h
        left join (select hour, sum(gpus) as gpus from pending group by hour) p
            on p.hour = h.hour
    )
    select 'peak_gpus' as series, 'site:' || site as scope, cast(hour as date) as day,
           max(demand) as y
    from site_hours group by site, cast(hour as date)
    union all
    select 'peak_gpus', 'total', cast(hour as date), max(demand)
    from total_hours group by cast(hour as date)
    """


def accounted_days(con: duckdb.DuckDBPyConnection, tables: set[str]) -> list[date]:
    """The accounted days: fct_ops_daily has one row for each; else the days of the marts."""
    if "fct_ops_daily" in tables:
        rows = con.execute("select distinct day from main.fct_ops_daily order by day").fetchall()
        if rows:
            return [r[0] for r in rows]
    parts = []
    if "fct_daily_spend" in tables:
        parts.append("select day from main.fct_daily_spend")
    if "fct_gpu_hours" in tables:
        parts.append("select cast(hour as date) as day from main.fct_gpu_hours")
    if not parts:
        return []
    sql = f"select distinct cast(day as date) from ({' union '.join(parts)}) order by 1"
    return [r[0] for r in con.execute(sql).fetchall()]


def densify(raw: pl.DataFrame, last_day: date, ends: dict[str, date] | None = None) -> pl.DataFrame:
    """Every series on every day from its first row through its end (`ends` per series kind,
    else `last_day`), missing days 0: a day its feeds delivered with no row for the scope is a
    real 0 (freshness.py reports the days a feed did not deliver)."""
    if raw.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    raw = trim(raw.filter(pl.col("day") <= last_day), ends or {})
    if raw.height == 0:
        return pl.DataFrame(schema=SCHEMA)
    limits = pl.DataFrame(
        {"series": SERIES, "_end": [(ends or {}).get(s, last_day) for s in SERIES]},
        schema={"series": pl.Utf8, "_end": pl.Date},
    )
    spans = (
        raw.group_by("series", "scope")
        .agg(pl.col("day").min().alias("first"))
        .join(limits, on="series", how="left")
        .with_columns(pl.col("_end").fill_null(last_day))
    )
    grid = spans.with_columns(
        pl.date_ranges(pl.col("first"), pl.col("_end"), interval="1d").alias("day")
    ).explode("day")
    summed = raw.group_by("series", "scope", "day").agg(pl.col("y").sum())
    return (
        grid.select("series", "scope", "day")
        .join(summed, on=["series", "scope", "day"], how="left")
        .with_columns(pl.col("y").fill_null(0.0))
        .sort("series", "scope", "day")
        .select(list(SCHEMA))
    )


def _requested(request: SeriesRequest, first_day: date) -> pl.DataFrame:
    """A zero row on the first accounted day for each requested scope, so a budget scope with
    no spend still has a (zero) series."""
    scopes = [f"team:{t}" for t in request.teams]
    scopes += [f"team:{t}+shared_idle" for t in request.shared_idle_teams]
    scopes += [f"provider:{p}" for p in request.providers]
    scopes += [f"sub_account:{s}" for s in request.sub_accounts]
    return pl.DataFrame(
        {
            "series": ["spend"] * len(scopes),
            "scope": scopes,
            "day": [first_day] * len(scopes),
            "y": [0.0] * len(scopes),
        },
        schema=SCHEMA,
    )


def read_series(
    con: duckdb.DuckDBPyConnection, request: SeriesRequest, max_feed_lag_days: int = 3
) -> FleetSeries:
    """Every series from the marts present in the warehouse `con` is connected to, each ending
    at the last day its feeds delivered (freshness.py)."""
    tables = _tables(con)
    days = accounted_days(con, tables)
    currency = "USD"
    if "fct_daily_spend" in tables:
        rows = con.execute("select max(currency) from main.fct_daily_spend").fetchall()
        currency = str(rows[0][0]) if rows and rows[0][0] else currency
    if not days:
        return FleetSeries(pl.DataFrame(schema=SCHEMA), None, currency, tables)
    parts: list[pl.DataFrame] = [_requested(request, days[0])]
    shared = list(request.shared_idle_teams)
    if "fct_daily_spend" in tables:
        parts.append(_frame(con, SPEND_SQL, [list(request.teams), shared]))
    if "fct_sub_account_daily_spend" in tables:
        parts.append(_frame(con, SUB_ACCOUNT_SQL))
    if "fct_gpu_hours" in tables:
        parts.append(_frame(con, GPU_HOURS_TOTAL_SQL))
        with_runs = {"fct_runs", "dim_nodes"} <= tables
        parts.append(_frame(con, peak_gpus_sql(with_runs)))
    if "fct_team_gpu_hours_daily" in tables:
        parts.append(_frame(con, GPU_HOURS_TEAM_SQL))
    raw = pl.concat(parts)
    found = series_ends(raw, read_feeds(con, tables, days), days[-1], max_feed_lag_days)
    frame = densify(raw, days[-1], found.ends)
    return FleetSeries(frame, days[-1], currency, tables, found.ends, found.notes)


def fleet_gpus(con: duckdb.DuckDBPyConnection, tables: set[str]) -> dict[str, int]:
    """GPUs in the fleet per scope (`total`, `site:<s>`): the physical GPUs of dim_gpus still in
    their slot (the inventory's GPUs; a replaced board counts no more once its successor
    reported), else the inventory's GPU count."""
    if "dim_gpus" in tables:
        sql = (
            "select site, count(distinct gpu_uuid) from main.dim_gpus "
            "where in_service_to is null group by site"
        )
    elif "dim_nodes" in tables:
        sql = "select site, sum(gpus_per_node) from main.dim_nodes group by site"
    else:
        return {}
    out: dict[str, int] = {}
    for site, n in con.execute(sql).fetchall():
        if site is not None:
            out[f"site:{site}"] = int(n or 0)
        out["total"] = out.get("total", 0) + int(n or 0)
    return out
