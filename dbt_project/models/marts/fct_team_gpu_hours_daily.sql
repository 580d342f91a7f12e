-- GPU-hours per team and UTC day (docs/metrics.md): the scheduler's allocation (GPUs x the
-- part of [started_at, ended_at or the end of the window) inside the day, per run in
-- int_run_allocated_days), and what telemetry says the runs did with it (busy /
-- allocated-idle GPU-hours, direct cost, GPU energy and, on rate-card nodes, its cost). Every
-- accounted day, whichever sources landed: a Slurm-only warehouse has its allocation here.
-- Runs no team rule matched are `unattributed`.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the
-- days from the first hour int_team_days_recompute_from chose on (the GPU-hour states' first
-- day, or the first day a run's allocation or team changed).
-- (the first hour: {{ ref('int_team_days_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_team_days_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_team_days_recompute_from') %}
with

allocated as (

    select
        day_epoch,
        team,
        count(distinct run_id) as runs,
        sum(allocated_gpu_seconds) / 3600 as allocated_gpu_hours
    from {{ ref('int_run_allocated_days') }}
    where day_epoch >= {{ from_hour }}
    group by day_epoch, team

),

held as (

    select
        run_hours.day_epoch,
        run_teams.team,
        sum(run_hours.busy_seconds) / 3600 as busy_gpu_hours,
        sum(run_hours.allocated_idle_seconds) / 3600 as allocated_idle_gpu_hours,
        sum(run_hours.cost) as cost,
        sum(run_hours.energy_wh) / 1000 as energy_kwh,
        sum(run_hours.energy_cost) as energy_cost
    from {{ ref('int_run_gpu_hour_costs') }} as run_hours
    inner join {{ ref('fct_runs') }} as run_teams
        on run_teams.run_id = run_hours.run_id
    where run_hours.day_epoch >= {{ from_hour }}
    group by run_hours.day_epoch, run_teams.team

),

final as (

    select
        cast({{ from_epoch('allocated.day_epoch') }} as date) as day,
        allocated.team,
        allocated.runs,
        allocated.allocated_gpu_hours,
        coalesce(held.busy_gpu_hours, 0) as busy_gpu_hours,
        coalesce(held.allocated_idle_gpu_hours, 0) as allocated_idle_gpu_hours,
        coalesce(held.cost, 0) as cost,
        coalesce(held.energy_kwh, 0) as energy_kwh,
        held.energy_cost,
        allocated.day_epoch
    from allocated
    left join held
        on held.day_epoch = allocated.day_epoch
        and (held.team = allocated.team or (held.team is null and allocated.team is null))

)

select * from final
