-- release_idle (docs/metrics.md, "Recommendations"): a run (a job, a pod, a notebook) that
-- sat idle while holding GPUs on at least var release_idle_min_days days. A run-day is idle
-- when its allocated-idle GPU-seconds are at least var release_idle_day_share of the GPU-
-- seconds it held that day and at least var release_idle_min_gpu_hours GPU-hours. Savings: the
-- run's allocated-idle cost over the window, per accounted hour, x
-- var recommendation_hours_per_month (what releasing the GPUs while idle saves in a month).
with

usage as (

    select * from {{ ref('int_run_hour_usage') }}

),

runs as (

    select run_id, team, user_name from {{ ref('int_runs') }}

),

window_hours as (

    select count(*) as hours from {{ ref('int_hours') }}

),

run_days as (

    select
        run_id,
        day_epoch,
        sum(held_seconds) as held_seconds,
        sum(allocated_idle_seconds) as allocated_idle_seconds
    from usage
    group by 1, 2

),

idle_days as (

    select
        run_id,
        count(*) as days_observed,
        sum(case
            when allocated_idle_seconds >= {{ var('release_idle_day_share') }} * held_seconds
                and allocated_idle_seconds >= {{ var('release_idle_min_gpu_hours') }} * 3600
            then 1 else 0
        end) as idle_days
    from run_days
    group by 1

),

per_run as (

    select
        run_id,
        sum(held_seconds) / 3600 as gpu_hours,
        sum(allocated_idle_seconds) / 3600 as allocated_idle_gpu_hours,
        sum(cost) as window_cost,
        sum(allocated_idle_cost) as window_savings,
        {{ percentile_cont('mean_utilization', 0.95) }} as p95_utilization,
        {{ percentile_cont('max_memory_used_mib', 0.95) }} / 1024 as p95_memory_gb
    from usage
    group by 1

),

final as (

    select
        'release_idle' as kind,
        per_run.run_id as subject,
        runs.team,
        runs.user_name as owner,
        idle_days.days_observed,
        per_run.p95_utilization,
        per_run.p95_memory_gb,
        per_run.gpu_hours,
        per_run.window_cost,
        per_run.window_savings,
        per_run.window_savings * {{ var('recommendation_hours_per_month') }}
            / window_hours.hours as monthly_savings,
        'release the GPUs while idle (' || cast(round(per_run.allocated_idle_gpu_hours, 1)
            as string) || ' allocated-idle GPU-hours)' as action,
        'idle on ' || cast(idle_days.idle_days as string) || ' of '
            || cast(idle_days.days_observed as string) || ' days observed' as evidence
    from per_run
    inner join idle_days
        on idle_days.run_id = per_run.run_id
    inner join runs
        on runs.run_id = per_run.run_id
    cross join window_hours
    where idle_days.idle_days >= {{ var('release_idle_min_days') }}
        and per_run.window_savings > 0

)

select * from final
