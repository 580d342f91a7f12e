"""The query layer's spend figures for the cost explorer, the overview's period comparison and the
budgets and alerts page (see fleetledger/queries.py for the conventions: an open read-only
connection in, a pandas DataFrame out, every filter a bound parameter).

Group-by columns are identifiers, so they come from the fixed allow-list `BREAKDOWN_DIMENSIONS`
and are never taken from the caller as SQL; filter values are bound as list parameters.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import date, timedelta

import pandas as pd

from fleetledger.queries import Con, _query

#: the cost explorer's group-by dimensions: name shown (and used in URLs) -> fct_spend_breakdown
BREAKDOWN_DIMENSIONS: dict[str, str] = {
    "team": "team",
    "provider": "provider",
    "service": "service",
    "instance_type": "instance_type",
    "site": "site",
    "kind": "kind",
    "user": "user_name",
}
IDLE_MODES: tuple[str, ...] = ("separate", "shared")
#: the group of the GPU nodes' unallocated + down cost when idle is shown separately
IDLE_GROUP = "(idle)"
NONE_GROUP = "(none)"

Filters = Mapping[str, Sequence[str]]


def _column(dimension: str) -> str:
    if dimension not in BREAKDOWN_DIMENSIONS:
        raise ValueError(f"unknown dimension {dimension!r}; one of {sorted(BREAKDOWN_DIMENSIONS)}")
    return BREAKDOWN_DIMENSIONS[dimension]


def _breakdown_sql(
    group_by: str, idle: str, filters: Filters, start: date, end: date, by_day: bool
) -> tuple[str, list[object]]:
    """The SQL of the explorer's table (by_day False) or chart (by_day True), and its params."""
    column = _column(group_by)
    if idle not in IDLE_MODES:
        raise ValueError(f"unknown idle mode {idle!r}; one of {IDLE_MODES}")
    where = ["day between ? and ?"]
    params: list[object] = [start, end]
    for dimension, values in sorted(filters.items()):
        if values:
            where.append(f"list_contains(?, coalesce({_column(dimension)}, ?))")
            params += [list(values), NONE_GROUP]
    if idle == "separate":
        # the GPU nodes' unallocated + down cost (team null) is its own group
        group = f"case when team is null then ? else coalesce(cast({column} as varchar), ?) end"
        group_params: list[object] = [IDLE_GROUP, NONE_GROUP]
        shared = "0.0"
    else:
        # idle shared to the teams: their direct cost + shared_idle_cost; the idle rows drop out
        where.append("team is not null")
        group = f"coalesce(cast({column} as varchar), ?)"
        group_params = [NONE_GROUP]
        shared = "shared_idle_cost"
    day = "day, " if by_day else ""
    sql = f"""
        select {day}{group} as "{group_by}",
               cast(sum(gpu_node_cost) as double) as gpu_node_cost,
               cast(sum(other_cost) as double) as other_cost,
               cast(sum({shared}) as double) as shared_idle_cost,
               cast(sum(cost + {shared}) as double) as spend
        from main.fct_spend_breakdown
        where {" and ".join(where)}
        group by {"1, 2" if by_day else "1"}
    """
    # group_params bind the `case` in the select list, which comes before the where clause
    return sql, group_params + params


def spend_breakdown(
    con: Con,
    start: date,
    end: date,
    group_by: str = "team",
    idle: str = "separate",
    filters: Filters | None = None,
) -> pd.DataFrame:
    """The cost explorer's table: spend per group over the range (fct_spend_breakdown).

    Columns: <group_by>, spend, gpu_node_cost, other_cost, shared_idle_cost, share (of the
    table's spend); highest spend first. `idle='separate'`: the GPU nodes' unallocated + down
    cost is the group `(idle)`; `'shared'`: it is shared to the teams pro rata to direct cost
    (shared_idle_cost), so spend = direct + shared idle. Nulls are the group `(none)`.
    """
    sql, params = _breakdown_sql(group_by, idle, filters or {}, start, end, by_day=False)
    df = _query(
        con,
        f"""
        with groups as ({sql})
        select "{group_by}", spend, gpu_node_cost, other_cost, shared_idle_cost,
               spend / nullif(sum(spend) over (), 0) as share
        from groups
        order by spend desc, "{group_by}"
        """,
        tuple(params),
    )
    return df


def spend_breakdown_daily(
    con: Con,
    start: date,
    end: date,
    group_by: str = "team",
    idle: str = "separate",
    filters: Filters | None = None,
) -> pd.DataFrame:
    """The explorer's stacked chart: columns day, <group_by>, spend (as `spend_breakdown`)."""
    sql, params = _breakdown_sql(group_by, idle, filters or {}, start, end, by_day=True)
    return _query(
        con,
        f'with daily as ({sql}) select day, "{group_by}", spend from daily order by 1, 2',
        tuple(params),
    )


def breakdown_values(con: Con, dimension: str, start: date, end: date) -> list[str]:
    """The values of one dimension in the range (nulls as `(none)`), for the filter pickers."""
    column = _column(dimension)
    df = _query(
        con,
        f"""
        select distinct coalesce(cast({column} as varchar), ?) as value
        from main.fct_spend_breakdown
        where day between ? and ? and team is not null
        order by 1
        """,
        (NONE_GROUP, start, end),
    )
    return [str(v) for v in df["value"]]


def daily_spend_totals(con: Con, start: date, end: date) -> pd.DataFrame:
    """fct_daily_spend per day, team, provider and service over the range (what the breakdown
    reconciles to). Columns: day, team, provider, service, cost, shared_idle_cost."""
    return _query(
        con,
        """
        select day, team, provider, service,
               cast(sum(cost) as double) as cost,
               cast(sum(shared_idle_cost) as double) as shared_idle_cost
        from main.fct_daily_spend
        where day between ? and ?
        group by 1, 2, 3, 4
        """,
        (start, end),
    )


def previous_period(start: date, end: date) -> tuple[date, date]:
    """The period of equal length just before [start, end]."""
    days = (end - start).days + 1
    return start - timedelta(days=days), start - timedelta(days=1)


def period_comparison(con: Con, start: date, end: date) -> pd.DataFrame:
    """The overview's change vs the previous period of equal length, one row per metric.

    Columns: metric (spend: fct_billing effective cost by ChargePeriodStart's day; idle_cost:
    fct_idle_gpu_hours unallocated + down cost; gpu_hours and utilization: fct_gpu_hours),
    current, previous (null when the previous period has no rows).
    """
    p_start, p_end = previous_period(start, end)
    return _query(
        con,
        """
        with periods(period, lo, hi) as (
            values ('current', cast(? as date), cast(? as date)),
                   ('previous', cast(? as date), cast(? as date))
        ),
        spend as (
            select p.period, sum(b.x_effective_cost_reporting) as value, count(b.x_line_key) as n
            from periods p
            left join main.fct_billing b
              on cast(b.ChargePeriodStart as date) between p.lo and p.hi
            group by p.period
        ),
        idle as (
            select p.period, sum(i.cost) as value, count(i.cost) as n
            from periods p
            left join main.fct_idle_gpu_hours i
              on cast(i.day as date) between p.lo and p.hi and i.cause <> 'allocated_idle'
            group by p.period
        ),
        hours as (
            select p.period,
                   sum(g.busy_seconds + g.allocated_idle_seconds + g.unallocated_seconds
                       + g.down_seconds) / 3600.0 as gpu_hours,
                   sum(g.busy_seconds) / nullif(sum(g.busy_seconds + g.allocated_idle_seconds
                       + g.unallocated_seconds + g.down_seconds), 0) as utilization,
                   count(g.hour) as n
            from periods p
            left join main.fct_gpu_hours g on cast(g.hour as date) between p.lo and p.hi
            group by p.period
        ),
        metrics as (
            select 'spend' as metric, period, case when n > 0 then value end as value from spend
            union all
            select 'idle_cost', period, case when n > 0 then coalesce(value, 0) end from idle
            union all
            select 'gpu_hours', period, case when n > 0 then gpu_hours end from hours
            union all
            select 'utilization', period, utilization from hours
        )
        select metric,
               cast(max(value) filter (where period = 'current') as double) as current,
               cast(max(value) filter (where period = 'previous') as double) as previous
        from metrics
        group by metric
        order by metric
        """,
        (start, end, p_start, p_end),
    )


# ------------------------------------------------------------------ budgets and alerts


_BUDGET_STATUS = """
        select budget, period_start, amount, currency, spend_to_date, data_through,
               forecast_period_end, forecast_lo_80, forecast_hi_80, used_share,
               thresholds_crossed_actual, thresholds_crossed_forecast
        from main.fct_budget_status
"""


def budget_status(con: Con) -> pd.DataFrame:
    """Every budget period (fct_budget_status), the latest period first."""
    return _query(
        con,
        _BUDGET_STATUS + "order by period_start desc, budget",
    )


def current_budgets(con: Con) -> pd.DataFrame:
    """Each budget's latest period (fct_budget_status), as `budget_status`, by budget."""
    return _query(
        con,
        _BUDGET_STATUS
        + "qualify row_number() over (partition by budget order by period_start desc) = 1 "
        + "order by budget",
    )


def alert_history(con: Con, active_only: bool = False) -> pd.DataFrame:
    """Alerts (fct_alerts) with their delivery results (fct_alert_deliveries), newest first.

    Columns: alert_id, rule, subject, team, period, threshold, amount, message,
    first_raised_at, resolved_at, deliveries (attempts), sent (channels with a sent attempt),
    failed (attempts that failed), last_error.
    """
    return _query(
        con,
        """
        with deliveries as (
            select alert_id,
                   count(*) as deliveries,
                   count(distinct channel) filter (where status = 'sent') as sent,
                   count(*) filter (where status = 'failed') as failed,
                   nullif(arg_max(coalesce(error, ''), attempted_at), '') as last_error
            from main.fct_alert_deliveries
            group by alert_id
        )
        select a.alert_id, a.rule, a.subject, a.team, a.period, a.threshold,
               cast(a.amount as double) as amount, a.message, a.first_raised_at, a.resolved_at,
               coalesce(d.deliveries, 0) as deliveries, coalesce(d.sent, 0) as sent,
               coalesce(d.failed, 0) as failed, d.last_error
        from main.fct_alerts a
        left join deliveries d using (alert_id)
        where not ? or a.resolved_at is null
        order by a.first_raised_at desc, a.alert_id
        """,
        (bool(active_only),),
    )


def alert_deliveries(con: Con) -> pd.DataFrame:
    """Every delivery attempt (fct_alert_deliveries), newest first."""
    return _query(
        con,
        """
        select alert_id, channel, attempt, attempted_at, status, error
        from main.fct_alert_deliveries
        order by attempted_at desc, alert_id, channel, attempt
        """,
    )
