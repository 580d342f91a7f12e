-- Idle GPU-hours and their cost by day, team, node and cause. `unallocated` and `down` have no
-- team; `allocated_idle` belongs to the team of the run holding the GPU (and its cost is also
-- inside that run's cost: never add it to run costs again).
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on (the GPU-hour states' first day, or the
-- first day of a run whose team changed).
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

states as (

    select * from {{ ref('int_gpu_hour_states') }}
    where day_epoch >= {{ from_hour }}

),

run_hours as (

    select * from {{ ref('int_run_gpu_hour_costs') }}
    where day_epoch >= {{ from_hour }}

),

runs as (

    select run_id, team from {{ ref('int_runs') }}

),

unheld as (

    select
        day_epoch,
        cast(null as string) as team,
        host,
        'unallocated' as cause,
        sum(unallocated_seconds) / 3600 as gpu_hours,
        sum(unallocated_seconds * cost_per_second) as cost
    from states
    group by day_epoch, host
    union all
    select
        day_epoch,
        cast(null as string) as team,
        host,
        'down' as cause,
        sum(down_seconds) / 3600 as gpu_hours,
        sum(down_seconds * cost_per_second) as cost
    from states
    group by day_epoch, host

),

held as (

    select
        run_hours.day_epoch,
        runs.team,
        run_hours.host,
        'allocated_idle' as cause,
        sum(run_hours.allocated_idle_seconds) / 3600 as gpu_hours,
        sum(run_hours.allocated_idle_cost) as cost
    from run_hours
    inner join runs
        on runs.run_id = run_hours.run_id
    group by run_hours.day_epoch, runs.team, run_hours.host

),

final as (

    select
        cast({{ from_epoch('day_epoch') }} as date) as day,
        team,
        host,
        cause,
        gpu_hours,
        cost,
        day_epoch
    from unheld
    union all
    select
        cast({{ from_epoch('day_epoch') }} as date) as day,
        team,
        host,
        cause,
        gpu_hours,
        cost,
        day_epoch
    from held

)

select * from final
