-- What each run cost. `cost` is direct (its held GPU-seconds at the GPU's rate, allocated-idle
-- included); `shared_idle_cost` is its pro-rata share of the day's unallocated and down cost
-- per provider, by direct cost (as OpenCost does). A failed run's `lost_work_cost` is the
-- direct cost of its GPU-seconds since its last checkpoint marker (the whole run without one):
-- each run-hour's cost x overlap([lost_from, end), hour) / overlap([started, end), hour), exact
-- while the run holds the same GPUs, none of them down, for the whole hour.
with

runs as (

    select * from {{ ref('fct_runs') }}

),

run_hours as (

    select * from {{ ref('int_run_gpu_hour_costs') }}

),

checkpoints as (

    select * from {{ ref('int_run_checkpoints') }}

),

window_bounds as (

    select max(hour_epoch) + 3600 as t_end from {{ ref('int_hours') }}

),

lost_windows as (

    -- failed runs: the work since the last checkpoint (or since the start) is lost
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
    where runs.failure_class is not null and runs.started_at is not null

),

run_hour_costs as (

    select
        run_id,
        hour_epoch,
        sum(cost) as cost
    from run_hours
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

idle_pool as (

    select
        day_epoch,
        provider,
        sum((unallocated_seconds + down_seconds) * cost_per_second) as idle_cost
    from {{ ref('int_gpu_hour_states') }}
    group by day_epoch, provider

),

run_day as (

    select
        run_id,
        day_epoch,
        provider,
        sum(cost) as cost
    from run_hours
    group by run_id, day_epoch, provider

),

run_day_share as (

    select
        run_day.*,
        run_day.cost
        / nullif(sum(run_day.cost) over (partition by run_day.day_epoch, run_day.provider), 0)
            as share
    from run_day

),

shared as (

    select
        run_day_share.run_id,
        sum(idle_pool.idle_cost * run_day_share.share) as shared_idle_cost
    from run_day_share
    inner join idle_pool
        on idle_pool.day_epoch = run_day_share.day_epoch
        and idle_pool.provider = run_day_share.provider
    group by run_day_share.run_id

),

per_run as (

    select
        run_id,
        sum(busy_seconds) / 3600.0 as busy_gpu_hours,
        sum(allocated_idle_seconds) / 3600.0 as allocated_idle_gpu_hours,
        sum(down_seconds) / 3600.0 as down_gpu_hours,
        sum(unobserved_seconds) / 3600.0 as unobserved_gpu_hours,
        sum(cost) as cost,
        sum(list_cost) as list_cost,
        sum(allocated_idle_cost) as allocated_idle_cost,
        sum(energy_wh) / 1000.0 as energy_kwh,
        sum(energy_cost) as energy_cost,
        max(case when mapping = 'estimated' then 1 else 0 end) as any_estimated
    from run_hours
    group by run_id

),

final as (

    select
        runs.run_id,
        runs.team,
        runs.gpu_hours,
        coalesce(per_run.busy_gpu_hours, 0) as busy_gpu_hours,
        coalesce(per_run.allocated_idle_gpu_hours, 0) as allocated_idle_gpu_hours,
        coalesce(per_run.down_gpu_hours, 0) as down_gpu_hours,
        coalesce(per_run.unobserved_gpu_hours, 0) as unobserved_gpu_hours,
        coalesce(per_run.cost, 0) as cost,
        coalesce(per_run.list_cost, 0) as list_cost,
        coalesce(per_run.allocated_idle_cost, 0) as allocated_idle_cost,
        coalesce(shared.shared_idle_cost, 0) as shared_idle_cost,
        coalesce(per_run.energy_kwh, 0) as energy_kwh,
        per_run.energy_cost,
        coalesce(lost.lost_work_cost, 0) as lost_work_cost,
        case when per_run.any_estimated = 1 then 'estimated' else 'exact' end as mapping,
        checkpoints.last_checkpoint_at,
        coalesce(checkpoints.checkpoints, 0) as checkpoints,
        case
            when runs.failure_class is null or runs.started_at is null then 0
            else coalesce(lost_windows.t_to - lost_windows.lost_from, 0)
        end as lost_work_seconds
    from runs
    left join per_run
        on per_run.run_id = runs.run_id
    left join shared
        on shared.run_id = runs.run_id
    left join checkpoints
        on checkpoints.run_id = runs.run_id
    left join lost_windows
        on lost_windows.run_id = runs.run_id
    left join lost
        on lost.run_id = runs.run_id

)

select * from final
