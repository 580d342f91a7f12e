-- release_capacity (docs/metrics.md, "Recommendations"): a cloud node pool (the inventory's
-- non-onprem GPU nodes of one cluster and instance type) whose unallocated GPU-hours (no run
-- held them: int_gpu_hour_states) are at least var release_capacity_min_share of its GPU-hours.
-- Savings: the pool's unallocated cost over the window, per accounted hour, x
-- var recommendation_hours_per_month.
with

states as (

    select * from {{ ref('int_gpu_hour_states') }}

),

inventory as (

    select host, cluster, instance_type from {{ ref('stg_config__inventory') }}

),

window_hours as (

    select count(*) as hours from {{ ref('int_hours') }}

),

pooled as (

    select
        states.*,
        states.provider || ':' || coalesce(inventory.cluster, states.site) || ':'
            || coalesce(inventory.instance_type, 'unknown') as pool
    from states
    inner join inventory
        on inventory.host = states.host
    where states.provider <> 'onprem'

),

per_pool as (

    select
        pool,
        count(distinct day_epoch) as days_observed,
        count(distinct host) as nodes,
        count(*) as gpu_hours,
        sum(unallocated_seconds) / 3600 as unallocated_gpu_hours,
        sum(cost) as window_cost,
        sum(unallocated_seconds * cost_per_second) as window_savings,
        {{ percentile_cont('mean_utilization', 0.95) }} as p95_utilization,
        {{ percentile_cont('max_memory_used_mib', 0.95) }} / 1024 as p95_memory_gb
    from pooled
    group by 1

),

final as (

    select
        'release_capacity' as kind,
        per_pool.pool as subject,
        cast(null as string) as team,
        cast(null as string) as owner,
        per_pool.days_observed,
        per_pool.p95_utilization,
        per_pool.p95_memory_gb,
        cast(per_pool.gpu_hours as double) as gpu_hours,
        per_pool.window_cost,
        per_pool.window_savings,
        per_pool.window_savings * {{ var('recommendation_hours_per_month') }}
            / window_hours.hours as monthly_savings,
        'release ' || cast(round(per_pool.unallocated_gpu_hours / window_hours.hours, 2)
            as string) || ' GPUs of unallocated capacity on average' as action,
        cast(round(per_pool.unallocated_gpu_hours, 1) as string) || ' of '
            || cast(per_pool.gpu_hours as string) || ' GPU-hours unallocated on '
            || cast(per_pool.nodes as string) || ' nodes' as evidence
    from per_pool
    cross join window_hours
    where per_pool.unallocated_gpu_hours
        >= {{ var('release_capacity_min_share') }} * per_pool.gpu_hours
        and per_pool.window_savings > 0

)

select * from final
