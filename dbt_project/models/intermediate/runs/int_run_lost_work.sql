-- The work each failed run lost (docs/metrics.md, fct_run_costs `lost_work_cost`): the direct
-- cost of its GPU-seconds since its last checkpoint marker (int_run_checkpoints; the whole run
-- without one), one row per started run with a failure_class. Per run-hour of
-- int_run_gpu_hour_costs: the hour's cost x overlap([lost_from, end), hour) /
-- overlap([started, end), hour), exact while the run holds the same GPUs, none of them down,
-- for the whole hour. A run still running at the end of the window loses up to that end.
with

runs as (

    select
        runs.run_id,
        runs.started_at,
        runs.ended_at
    from {{ ref('int_runs') }} as runs
    inner join {{ ref('int_run_failure_classes') }} as failures
        on failures.run_id = runs.run_id
    where failures.failure_class is not null and runs.started_at is not null

),

checkpoints as (

    select * from {{ ref('int_run_checkpoints') }}

),

window_bounds as (

    select max(hour_epoch) + 3600 as t_end from {{ ref('int_hours') }}

),

lost_windows as (

    -- the work since the last checkpoint (or since the start) is lost
    select
        runs.run_id,
        {{ to_epoch('runs.started_at') }} as t_from,
        coalesce({{ to_epoch('runs.ended_at') }}, window_bounds.t_end) as t_to,
        coalesce(
            {{ to_epoch('checkpoints.last_checkpoint_at') }}, {{ to_epoch('runs.started_at') }}
        ) as lost_from
    from runs
    cross join window_bounds
    left join checkpoints
        on checkpoints.run_id = runs.run_id

),

run_hour_costs as (

    select
        run_id,
        hour_epoch,
        sum(cost) as cost
    from {{ ref('int_run_gpu_hour_costs') }}
    group by run_id, hour_epoch

),

lost as (

    select
        lost_windows.run_id,
        sum(
            run_hour_costs.cost
            * greatest(
                least(lost_windows.t_to, run_hour_costs.hour_epoch + 3600)
                - greatest(lost_windows.lost_from, run_hour_costs.hour_epoch),
                0
            )
            / nullif(
                least(lost_windows.t_to, run_hour_costs.hour_epoch + 3600)
                - greatest(lost_windows.t_from, run_hour_costs.hour_epoch),
                0
            )
        ) as lost_work_cost
    from lost_windows
    inner join run_hour_costs
        on run_hour_costs.run_id = lost_windows.run_id
    group by lost_windows.run_id

),

final as (

    select
        lost_windows.run_id,
        lost_windows.t_from,
        lost_windows.t_to,
        lost_windows.lost_from,
        lost_windows.t_to - lost_windows.lost_from as lost_work_seconds,
        lost.lost_work_cost
    from lost_windows
    left join lost
        on lost.run_id = lost_windows.run_id

)

select * from final
