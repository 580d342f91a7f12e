"""The query layer's fleet figures: idle and waste, fleet health, energy, forecasts and capacity,
data health (see fleetledger/queries.py for the conventions)."""

from __future__ import annotations

from datetime import date

import pandas as pd

from fleetledger.queries import Con, _query

#: GPU states in the heatmap's order (its colour scale's codes 0..3)
GPU_STATES: tuple[str, ...] = ("busy", "allocated_idle", "unallocated", "down")

# --------------------------------------------------------------------------- idle and waste


def gpu_state_heatmap(con: Con, start: date, end: date) -> pd.DataFrame:
    """Node x hour GPU states (fct_gpu_hours): host, hour, the GPU-seconds of each state
    summed over the node's GPUs, state (the one with most seconds, ties in GPU_STATES order)
    and state_code (its index in GPU_STATES)."""
    return _query(
        con,
        """
        with node_hours as (
            select host, hour,
                   sum(busy_seconds) as busy, sum(allocated_idle_seconds) as allocated_idle,
                   sum(unallocated_seconds) as unallocated, sum(down_seconds) as down
            from main.fct_gpu_hours
            where cast(hour as date) between ? and ?
            group by 1, 2
        )
        select host, hour,
               cast(busy as double) as busy_seconds,
               cast(allocated_idle as double) as allocated_idle_seconds,
               cast(unallocated as double) as unallocated_seconds,
               cast(down as double) as down_seconds,
               case greatest(busy, allocated_idle, unallocated, down)
                   when busy then 0 when allocated_idle then 1 when unallocated then 2 else 3
               end as state_code
        from node_hours
        order by host, hour
        """,
        (start, end),
    ).assign(state=lambda df: [GPU_STATES[int(c)] for c in df["state_code"]])


def idle_cost_by_team(con: Con, start: date, end: date) -> pd.DataFrame:
    """Idle GPU-hours and cost per team and cause (fct_idle_gpu_hours; team null, nobody held
    it, as `(unallocated)`). Columns: team, cause, gpu_hours, cost."""
    return _query(
        con,
        """
        select coalesce(team, '(unallocated)') as team, cause,
               cast(sum(gpu_hours) as double) as gpu_hours, cast(sum(cost) as double) as cost
        from main.fct_idle_gpu_hours
        where cast(day as date) between ? and ?
        group by 1, 2
        order by cost desc, team, cause
        """,
        (start, end),
    )


def longest_idle_allocations(con: Con, start: date, end: date, limit: int = 20) -> pd.DataFrame:
    """Runs active in the range with the most allocated-idle GPU-hours, and their owners
    (fct_run_costs joined to fct_runs). Columns: run_id, team, user_name, job_name, kind,
    hosts, started_at, ended_at, allocated_idle_gpu_hours, allocated_idle_cost, gpu_hours,
    idle_share (allocated-idle / all GPU-hours)."""
    return _query(
        con,
        """
        select c.run_id, r.team, r.user_name, r.job_name, r.kind, r.hosts,
               r.started_at, r.ended_at,
               cast(c.allocated_idle_gpu_hours as double) as allocated_idle_gpu_hours,
               cast(c.allocated_idle_cost as double) as allocated_idle_cost,
               cast(c.gpu_hours as double) as gpu_hours,
               cast(c.allocated_idle_gpu_hours / nullif(c.gpu_hours, 0) as double)
                   as idle_share
        from main.fct_run_costs c
        join main.fct_runs r using (run_id)
        where c.allocated_idle_gpu_hours > 0
          and cast(r.started_at as date) <= ?
          and (r.ended_at is null or cast(r.ended_at as date) >= ?)
        order by c.allocated_idle_gpu_hours desc, c.run_id
        limit ?
        """,
        (end, start, int(limit)),
    )


# --------------------------------------------------------------------------- fleet health


def health_by_node(con: Con, start: date, end: date) -> pd.DataFrame:
    """Per node over the range (fct_fleet_health_daily): host, site, downtime_hours,
    gpu_down_hours, xids, fatal_xids, ecc_sbe_errors, ecc_dbe_errors, correctable and
    uncorrectable remapped rows, row_remap_failure, throttle / thermal / power throttle
    GPU-hours, stragglers."""
    return _query(
        con,
        """
        select host, max(site) as site,
               cast(sum(downtime_seconds) as double) / 3600 as downtime_hours,
               cast(sum(gpu_down_seconds) as double) / 3600 as gpu_down_hours,
               cast(coalesce(sum(xid_count), 0) as bigint) as xids,
               cast(coalesce(sum(fatal_xid_count), 0) as bigint) as fatal_xids,
               cast(coalesce(sum(ecc_sbe_errors), 0) as bigint) as ecc_sbe_errors,
               cast(coalesce(sum(ecc_dbe_errors), 0) as bigint) as ecc_dbe_errors,
               cast(coalesce(sum(correctable_remapped_rows), 0) as bigint)
                   as correctable_remapped_rows,
               cast(coalesce(sum(uncorrectable_remapped_rows), 0) as bigint)
                   as uncorrectable_remapped_rows,
               coalesce(bool_or(row_remap_failure), false) as row_remap_failure,
               cast(sum(throttle_gpu_seconds) as double) / 3600 as throttle_gpu_hours,
               cast(sum(thermal_throttle_gpu_seconds) as double) / 3600
                   as thermal_throttle_gpu_hours,
               cast(sum(power_throttle_gpu_seconds) as double) / 3600
                   as power_throttle_gpu_hours,
               cast(coalesce(sum(stragglers), 0) as bigint) as stragglers
        from main.fct_fleet_health_daily
        where cast(day as date) between ? and ?
        group by host
        order by downtime_hours desc, host
        """,
        (start, end),
    )


def downtime_daily(con: Con, start: date, end: date) -> pd.DataFrame:
    """Node downtime per day (fct_fleet_health_daily): day, host, downtime_hours."""
    return _query(
        con,
        """
        select cast(day as date) as day, host,
               cast(downtime_seconds as double) / 3600 as downtime_hours
        from main.fct_fleet_health_daily
        where cast(day as date) between ? and ? and downtime_seconds > 0
        order by 1, 2
        """,
        (start, end),
    )


def xids_by_code(con: Con, start: date, end: date) -> pd.DataFrame:
    """XID events per code (fct_xid_events): xid, is_fatal, events, gpus, hosts,
    lower_bound (some counts are a lower bound)."""
    return _query(
        con,
        """
        select xid, bool_or(is_fatal) as is_fatal,
               cast(sum(xid_count) as bigint) as events,
               count(distinct gpu_uuid) as gpus, count(distinct host) as hosts,
               bool_or(count_is_lower_bound) as lower_bound
        from main.fct_xid_events
        where cast(day as date) between ? and ?
        group by xid
        order by events desc, xid
        """,
        (start, end),
    )


def stragglers(con: Con, start: date, end: date) -> pd.DataFrame:
    """Straggler episodes overlapping the range (fct_stragglers), longest first."""
    return _query(
        con,
        """
        select run_id, team, host, gpu_index, gpu_uuid, metric, started_at, ended_at,
               cast(seconds as double) / 3600 as hours,
               cast(mean_value as double) as mean_value,
               cast(mean_median_other as double) as mean_median_other,
               cast(mean_shortfall as double) as mean_shortfall
        from main.fct_stragglers
        where cast(started_at as date) <= ? and cast(ended_at as date) >= ?
        order by seconds desc, run_id, gpu_uuid
        """,
        (end, start),
    )


# --------------------------------------------------------------------------- energy


def energy_by_team(con: Con, start: date, end: date) -> pd.DataFrame:
    """Energy and energy cost of the runs active in the range per team (fct_run_costs joined to
    fct_runs). Columns: team, runs, energy_kwh, energy_cost, cost."""
    return _query(
        con,
        """
        select coalesce(r.team, c.team, '(none)') as team, count(*) as runs,
               cast(coalesce(sum(c.energy_kwh), 0) as double) as energy_kwh,
               cast(coalesce(sum(c.energy_cost), 0) as double) as energy_cost,
               cast(coalesce(sum(c.cost), 0) as double) as cost
        from main.fct_run_costs c
        join main.fct_runs r using (run_id)
        where cast(r.started_at as date) <= ?
          and (r.ended_at is null or cast(r.ended_at as date) >= ?)
        group by 1
        order by energy_kwh desc, team
        """,
        (end, start),
    )


def energy_by_site_day(con: Con, start: date, end: date) -> pd.DataFrame:
    """GPU energy per site and day (fct_gpu_hours.energy_wh): site, day, gpu_kwh."""
    return _query(
        con,
        """
        select coalesce(site, '(none)') as site, cast(hour as date) as day,
               cast(coalesce(sum(energy_wh), 0) as double) / 1000 as gpu_kwh
        from main.fct_gpu_hours
        where cast(hour as date) between ? and ?
        group by 1, 2
        order by 2, 1
        """,
        (start, end),
    )


# --------------------------------------------------------------------------- forecasts


def forecast_scopes(con: Con) -> pd.DataFrame:
    """The (series, scope) pairs of fct_forecast."""
    return _query(
        con, "select distinct series, scope from main.fct_forecast order by series, scope"
    )


def forecast_series(con: Con, series: str, scope: str) -> pd.DataFrame:
    """One forecast series (fct_forecast): day, actual, yhat and the 80 / 95 % bounds, model,
    horizon, backtest error and coverage, insufficient_history, trained_through."""
    return _query(
        con,
        """
        select day, cast(actual as double) as actual, cast(yhat as double) as yhat,
               cast(lo_80 as double) as lo_80, cast(hi_80 as double) as hi_80,
               cast(lo_95 as double) as lo_95, cast(hi_95 as double) as hi_95,
               model, horizon, cast(backtest_error as double) as backtest_error,
               cast(backtest_coverage_80 as double) as backtest_coverage_80,
               cast(backtest_coverage_95 as double) as backtest_coverage_95,
               insufficient_history, trained_through
        from main.fct_forecast
        where series = ? and scope = ?
        order by day
        """,
        (series, scope),
    )


def capacity_runway(con: Con) -> pd.DataFrame:
    """Runway per capacity scope (fct_capacity): scope, fleet_gpus, runway_day (first future
    day the 80 % upper demand exceeds the fleet; null when none in the horizon),
    peak_gpus_hi_80_max, last_day."""
    return _query(
        con,
        """
        select scope, max(fleet_gpus) as fleet_gpus, min(runway_day) as runway_day,
               cast(max(peak_gpus_hi_80) as double) as peak_gpus_hi_80_max,
               max(day) as last_day
        from main.fct_capacity
        group by scope
        order by scope
        """,
    )


def capacity_series(con: Con, scope: str) -> pd.DataFrame:
    """fct_capacity for one scope: day, fleet_gpus, peak_gpus_demand, peak_gpus_hi_80."""
    return _query(
        con,
        """
        select day, cast(fleet_gpus as double) as fleet_gpus,
               cast(peak_gpus_demand as double) as peak_gpus_demand,
               cast(peak_gpus_hi_80 as double) as peak_gpus_hi_80
        from main.fct_capacity
        where scope = ?
        order by day
        """,
        (scope,),
    )


# --------------------------------------------------------------------------- data health


def source_freshness(con: Con) -> pd.DataFrame:
    """Per source (fct_data_health): last_run_at, last_day (the latest day a finding names),
    findings in the latest run, and the worst severity of the latest run."""
    return (
        _query(
            con,
            """
        with latest as (
            select source, max(run_at) as last_run_at from main.fct_data_health group by 1
        )
        select h.source, l.last_run_at, max(h.day) as last_day,
               count(*) filter (where h.run_at = l.last_run_at) as findings_last_run,
               max(case h.severity when 'error' then 4 when 'data_loss' then 3
                                   when 'warning' then 2 else 1 end)
                   filter (where h.run_at = l.last_run_at) as worst
        from main.fct_data_health h
        join latest l using (source)
        group by h.source, l.last_run_at
        order by h.source
        """,
        )
        .assign(
            worst_severity=lambda df: [
                {4: "error", 3: "data_loss", 2: "warning", 1: "info"}.get(int(w), "info")
                if pd.notna(w)
                else None
                for w in df["worst"]
            ]
        )
        .drop(columns=["worst"])
    )


def data_health_checks(con: Con, severities: tuple[str, ...] = ()) -> pd.DataFrame:
    """Every finding (fct_data_health), newest run first; only `severities` when given."""
    return _query(
        con,
        """
        select run_at, source, day, "check", severity, "count", message
        from main.fct_data_health
        where len(?) = 0 or list_contains(?, severity)
        order by run_at desc, source, day, "check"
        """,
        (list(severities), list(severities)),
    )


def quarantine_counts(con: Con) -> pd.DataFrame:
    """Quarantined rows per source and reason (fct_quarantine): source, reason, rows, files,
    partitions."""
    return _query(
        con,
        """
        select source, reason, cast(sum(rows) as bigint) as rows,
               cast(sum(files) as bigint) as files, count(*) as partitions
        from main.fct_quarantine
        group by 1, 2
        order by rows desc, source, reason
        """,
    )
