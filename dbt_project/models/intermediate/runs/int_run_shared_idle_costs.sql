-- Each run's share of the idle GPU cost (docs/metrics.md, fct_run_costs `shared_idle_cost`):
-- per UTC day and provider, the unallocated and down cost of the GPUs (int_gpu_hour_states)
-- shared to the runs in proportion to their direct cost that day (as OpenCost does). Runs with
-- no direct cost on a day with idle cost have no share of it.
with

run_hours as (

    select * from {{ ref('int_run_gpu_hour_costs') }}

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

final as (

    select
        run_day_share.run_id,
        sum(idle_pool.idle_cost * run_day_share.share) as shared_idle_cost
    from run_day_share
    inner join idle_pool
        on idle_pool.day_epoch = run_day_share.day_epoch
        and idle_pool.provider = run_day_share.provider
    group by run_day_share.run_id

)

select * from final
