-- Seconds of each GPU-hour by state (they sum to 3600), with its cost per second.
--   busy / allocated_idle: what runs held (int_run_gpu_hours);
--   down: fatal-XID coverage, plus seconds neither a sample covers nor a run holds;
--   unallocated: the remaining covered seconds.
with

spine as (

    select
        gpus.gpu_uuid,
        gpus.host,
        gpus.gpu_index,
        gpus.provider,
        gpus.site,
        gpus.gpus_per_node,
        hours.day_epoch,
        hours.hour_epoch
    from {{ ref('int_gpus') }} as gpus
    cross join {{ ref('int_hours') }} as hours

),

telemetry as (

    select * from {{ ref('int_gpu_hour_telemetry') }}

),

held as (

    select
        gpu_uuid,
        hour_epoch,
        sum(busy_seconds) as busy_seconds,
        sum(allocated_idle_seconds) as allocated_idle_seconds,
        sum(busy_seconds - unobserved_seconds + allocated_idle_seconds) as held_covered_ok_seconds,
        sum(unobserved_seconds) as unobserved_seconds
    from {{ ref('int_run_gpu_hours') }}
    group by gpu_uuid, hour_epoch

),

node_costs as (

    select * from {{ ref('int_node_hour_costs') }}

),

final as (

    select
        spine.gpu_uuid,
        spine.host,
        spine.gpu_index,
        spine.provider,
        spine.site,
        spine.day_epoch,
        spine.hour_epoch,
        coalesce(held.busy_seconds, 0) as busy_seconds,
        coalesce(held.allocated_idle_seconds, 0) as allocated_idle_seconds,
        coalesce(telemetry.covered_seconds, 0) - coalesce(telemetry.fatal_seconds, 0)
            - coalesce(held.held_covered_ok_seconds, 0) as unallocated_seconds,
        coalesce(telemetry.fatal_seconds, 0)
            + 3600 - coalesce(telemetry.covered_seconds, 0)
            - coalesce(held.unobserved_seconds, 0) as down_seconds,
        coalesce(held.unobserved_seconds, 0) as unobserved_seconds,
        telemetry.mean_utilization,
        telemetry.max_memory_used_mib,
        coalesce(telemetry.energy_wh, 0) as energy_wh,
        coalesce(node_costs.cost, 0) / spine.gpus_per_node as cost,
        coalesce(node_costs.list_cost, 0) / spine.gpus_per_node as list_cost,
        coalesce(node_costs.cost, 0) / spine.gpus_per_node / 3600.0 as cost_per_second,
        coalesce(node_costs.list_cost, 0) / spine.gpus_per_node / 3600.0 as list_cost_per_second
    from spine
    left join telemetry
        on telemetry.gpu_uuid = spine.gpu_uuid and telemetry.hour_epoch = spine.hour_epoch
    left join held
        on held.gpu_uuid = spine.gpu_uuid and held.hour_epoch = spine.hour_epoch
    left join node_costs
        on node_costs.host = spine.host and node_costs.hour_epoch = spine.hour_epoch

)

select * from final
