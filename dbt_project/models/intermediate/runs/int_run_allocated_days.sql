-- What the scheduler allocated each started run on each accounted UTC day (docs/metrics.md,
-- fct_team_gpu_hours_daily): its GPU equivalents x the part of [started_at, ended_at or the
-- end of the window) inside the day, in GPU-seconds, with the run's team.
-- Stored by day (macros/incremental.sql): a run rewrites the days from the first hour
-- int_team_days_recompute_from chose on (the GPU-hour states' first day, or the first day a
-- run's allocation changed: a later sacct export can end, move or withdraw a job of an earlier
-- day). A running run's last day ends at the window's end, the end of the last accounted day:
-- a later day's run finds the same whole days before its range.
-- (the first hour: {{ ref('int_team_days_recompute_from') }})
{{ incremental_by_day(to_last_day='int_team_days_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_team_days_recompute_from') %}
with

days as (

    select day_epoch from {{ ref('int_days') }}
    where day_epoch >= {{ from_hour }}

),

window_end as (

    select max(hour_epoch) + 3600 as t_end from {{ ref('int_hours') }}

),

runs as (

    select
        runs.run_id,
        runs.team,
        runs.gpu_equivalents,
        {{ to_epoch('runs.started_at') }} as started_epoch,
        coalesce({{ to_epoch('runs.ended_at') }}, window_end.t_end) as ended_epoch
    from {{ ref('int_runs') }} as runs
    cross join window_end
    where runs.started_at is not null

),

final as (

    select
        days.day_epoch,
        runs.run_id,
        runs.team,
        runs.gpu_equivalents * (
            least(runs.ended_epoch, days.day_epoch + 86400)
            - greatest(runs.started_epoch, days.day_epoch)
        ) as allocated_gpu_seconds
    from days
    inner join runs
        on runs.started_epoch < days.day_epoch + 86400
        and runs.ended_epoch > days.day_epoch

)

select * from final
