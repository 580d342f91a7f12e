-- What each run cost (docs/metrics.md): `cost` is direct (its held GPU-seconds at the GPU's
-- rate, allocated-idle included, summed from int_run_gpu_hour_costs); `shared_idle_cost` its
-- share of the day's unallocated and down cost per provider (int_run_shared_idle_costs); a
-- failed run's `lost_work_cost` / `lost_work_seconds` the work since its last checkpoint
-- marker (int_run_lost_work, int_run_checkpoints).
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

lost_work as (

    select * from {{ ref('int_run_lost_work') }}

),

shared as (

    select * from {{ ref('int_run_shared_idle_costs') }}

),

per_run as (

    select
        run_id,
        sum(busy_seconds) / 3600 as busy_gpu_hours,
        sum(allocated_idle_seconds) / 3600 as allocated_idle_gpu_hours,
        sum(down_seconds) / 3600 as down_gpu_hours,
        sum(unobserved_seconds) / 3600 as unobserved_gpu_hours,
        sum(cost) as cost,
        sum(list_cost) as list_cost,
        sum(allocated_idle_cost) as allocated_idle_cost,
        sum(energy_wh) / 1000 as energy_kwh,
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
        coalesce(lost_work.lost_work_cost, 0) as lost_work_cost,
        case when per_run.any_estimated = 1 then 'estimated' else 'exact' end as mapping,
        checkpoints.last_checkpoint_at,
        coalesce(checkpoints.checkpoints, 0) as checkpoints,
        coalesce(lost_work.lost_work_seconds, 0) as lost_work_seconds
    from runs
    left join per_run
        on per_run.run_id = runs.run_id
    left join shared
        on shared.run_id = runs.run_id
    left join checkpoints
        on checkpoints.run_id = runs.run_id
    left join lost_work
        on lost_work.run_id = runs.run_id

)

select * from final
