"""What the budget status and the alert rules read from a warehouse (the build one during a
run, the published one for `fleetledger alerts`), as polars frames.

Each frame is None when its mart is absent (a warehouse built before the mart existed, or
`fct_forecast` on a branch without forecasts); the rule that needs it is skipped with a finding.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import polars as pl

#: the marts the alerts read (dbt asset keys: the asset waits for them)
MARTS = (
    "fct_daily_spend",
    "fct_billing",
    "fct_runs",
    "fct_gpu_hours",
    "fct_team_gpu_hours_daily",
    "fct_idle_gpu_hours",
    "fct_fleet_health_daily",
    "fct_billing_restatements",
    "fct_inference_hourly",
)
#: the intermediate tables read beside them (per-run GPU-hours, spend pieces)
INTERMEDIATES = ("int_run_gpu_hour_costs", "int_daily_spend_allocations")

# spend pieces per day, team, provider, sub-account and service (fct_daily_spend's pieces,
# with the bill line's SubAccountId): budgets of every scope read the same prorated day spend
_SPEND = """
select
    cast(epoch_ms(cast(a.day_epoch as bigint) * 1000) as date) as day,
    a.team,
    a.provider,
    b."SubAccountId" as sub_account,
    a.service,
    sum(a.cost) as cost,
    sum(a.shared_idle_cost) as shared_idle_cost
from intermediate.int_daily_spend_allocations as a
left join main.fct_billing as b
    on b.x_line_key = a.x_line_key
group by 1, 2, 3, 4, 5
"""

_RUN_HOURS = """
select
    h.run_id,
    r.job_name,
    r.team,
    r.user_name,
    r.ended_at,
    cast(epoch_ms(cast(h.hour_epoch as bigint) * 1000) as timestamp) as hour,
    sum(h.held_seconds) as held_seconds,
    sum(h.allocated_idle_seconds) as allocated_idle_seconds,
    sum(h.cost) as cost
from intermediate.int_run_gpu_hour_costs as h
inner join main.fct_runs as r
    on r.run_id = h.run_id
group by 1, 2, 3, 4, 5, 6
"""

_GPU_HOURS = """
select gpu_uuid, host, gpu_index, cast(hour as timestamp) as hour, down_seconds, cost
from main.fct_gpu_hours
"""

_TEAM_DAILY = """
with idle as (
    select day, team, sum(cost) as allocated_idle_cost
    from main.fct_idle_gpu_hours
    where cause = 'allocated_idle'
    group by day, team
)
select t.day, t.team, t.busy_gpu_hours, t.allocated_idle_gpu_hours,
    coalesce(idle.allocated_idle_cost, 0) as allocated_idle_cost
from main.fct_team_gpu_hours_daily as t
left join idle on idle.day = t.day and idle.team = t.team
"""

_HEALTH = """
with down as (
    select day, host, sum(cost) as down_cost
    from main.fct_idle_gpu_hours
    where cause = 'down'
    group by day, host
)
select h.day, h.host, cast(h.xid_count as bigint) as xid_count,
    cast(h.fatal_xid_count as bigint) as fatal_xid_count,
    coalesce(down.down_cost, 0) as down_cost
from main.fct_fleet_health_daily as h
left join down on down.day = h.day and down.host = h.host
"""

# inference services per hour, all replicas together (alerts/rules_inference.py)
_SERVICE_HOURS = """
select
    model_name,
    cast(hour as timestamp) as hour,
    min(team) as team,
    sum(prompt_tokens + generation_tokens) as tokens,
    sum(cost) as cost,
    sum(gpu_hours) as gpu_hours,
    sum(gpu_hours * mean_utilization)
        / nullif(sum(case when mean_utilization is not null then gpu_hours end), 0)
        as mean_utilization,
    max(ttft_p95_s) as ttft_p95_s
from main.fct_inference_hourly
group by 1, 2
"""


@dataclass
class Inputs:
    spend: pl.DataFrame | None = None
    forecast: pl.DataFrame | None = None
    run_hours: pl.DataFrame | None = None
    gpu_hours: pl.DataFrame | None = None
    team_daily: pl.DataFrame | None = None
    health: pl.DataFrame | None = None
    restatements: pl.DataFrame | None = None
    service_hours: pl.DataFrame | None = None

    @property
    def data_through(self) -> date | None:
        """The last day with spend (the last accounted day)."""
        if self.spend is None or self.spend.height == 0:
            return None
        return self.spend["day"].max()  # type: ignore[return-value]


def _tables(con: duckdb.DuckDBPyConnection) -> set[str]:
    rows = con.execute("select table_schema, table_name from information_schema.tables").fetchall()
    return {f"{s}.{t}" for s, t in rows}


def _frame(con: duckdb.DuckDBPyConnection, sql: str) -> pl.DataFrame:
    return pl.from_arrow(con.sql(sql).to_arrow_table())  # type: ignore[return-value]


def read_inputs(con: duckdb.DuckDBPyConnection) -> Inputs:
    have = _tables(con)

    def has(*names: str) -> bool:
        return all(n in have for n in names)

    out = Inputs()
    if has("intermediate.int_daily_spend_allocations", "main.fct_billing"):
        out.spend = _frame(con, _SPEND)
    if has("main.fct_forecast"):
        out.forecast = _frame(con, "select * from main.fct_forecast")
    if has("intermediate.int_run_gpu_hour_costs", "main.fct_runs"):
        out.run_hours = _frame(con, _RUN_HOURS)
    if has("main.fct_gpu_hours"):
        out.gpu_hours = _frame(con, _GPU_HOURS)
    if has("main.fct_team_gpu_hours_daily", "main.fct_idle_gpu_hours"):
        out.team_daily = _frame(con, _TEAM_DAILY)
    if has("main.fct_fleet_health_daily", "main.fct_idle_gpu_hours"):
        out.health = _frame(con, _HEALTH)
    if has("main.fct_billing_restatements"):
        out.restatements = _frame(con, "select * from main.fct_billing_restatements")
    if has("main.fct_inference_hourly"):
        out.service_hours = _frame(con, _SERVICE_HOURS)
    return out


def read_warehouse(path: Path) -> Inputs:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return read_inputs(con)
    finally:
        con.close()
