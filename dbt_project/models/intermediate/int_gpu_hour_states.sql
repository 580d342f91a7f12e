-- Seconds of each GPU-hour by state (they sum to 3600), with its cost per second.
-- Per GPU unit (whole GPU or MIG instance) and hour:
--   busy / allocated_idle: what runs held (int_run_gpu_hours);
--   down: fatal-XID coverage, plus seconds neither a sample covers nor a run holds;
--   unallocated: the remaining covered seconds.
-- then summed over the GPU's units weighted by their fraction of the GPU.
with

units as (

    select * from {{ ref('int_gpu_units') }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

hours as (

    select * from {{ ref('int_hours') }}

),

telemetry as (

    select * from {{ ref('int_gpu_hour_telemetry') }}

),

held as (

    select
        gpu_uuid,
        mig_instance,
        hour_epoch,
        sum(busy_seconds) as busy_seconds,
        sum(allocated_idle_seconds) as allocated_idle_seconds,
        sum(busy_seconds - unobserved_seconds + allocated_idle_seconds) as held_covered_ok_seconds,
        sum(unobserved_seconds) as unobserved_seconds
    from {{ ref('int_run_gpu_hours') }}
    group by gpu_uuid, mig_instance, hour_epoch

),

unit_hours as (

    select
        units.gpu_uuid,
        units.mig_instance,
        units.unit_fraction,
        hours.day_epoch,
        hours.hour_epoch,
        coalesce(held.busy_seconds, 0) as busy_seconds,
        coalesce(held.allocated_idle_seconds, 0) as allocated_idle_seconds,
        coalesce(telemetry.covered_seconds, 0) - coalesce(telemetry.fatal_seconds, 0)
            - coalesce(held.held_covered_ok_seconds, 0) as unallocated_seconds,
        coalesce(telemetry.fatal_seconds, 0)
            + 3600 - coalesce(telemetry.covered_seconds, 0)
            - coalesce(held.unobserved_seconds, 0) as down_seconds,
        coalesce(held.unobserved_seconds, 0) as unobserved_seconds
    from units
    cross join hours
    left join telemetry
        on telemetry.gpu_uuid = units.gpu_uuid
        and telemetry.mig_instance = units.mig_instance
        and telemetry.hour_epoch = hours.hour_epoch
    left join held
        on held.gpu_uuid = units.gpu_uuid
        and held.mig_instance = units.mig_instance
        and held.hour_epoch = hours.hour_epoch

),

gpu_hours as (

    select
        gpu_uuid,
        day_epoch,
        hour_epoch,
        sum(busy_seconds * unit_fraction) as busy_seconds,
        sum(allocated_idle_seconds * unit_fraction) as allocated_idle_seconds,
        sum(unallocated_seconds * unit_fraction) as unallocated_seconds,
        sum(down_seconds * unit_fraction) as down_seconds,
        sum(unobserved_seconds * unit_fraction) as unobserved_seconds
    from unit_hours
    group by gpu_uuid, day_epoch, hour_epoch

),

device_telemetry as (

    select
        gpu_uuid,
        hour_epoch,
        sum(energy_wh) as energy_wh,
        max(case when mig_instance = '' then mean_utilization end) as device_utilization,
        sum(case when mig_instance <> '' then mean_utilization end) as mig_utilization,
        max(max_memory_used_mib) as max_memory_used_mib
    from telemetry
    group by gpu_uuid, hour_epoch

),

node_costs as (

    select * from {{ ref('int_node_hour_costs') }}

),

final as (

    select
        gpu_hours.gpu_uuid,
        gpus.host,
        gpus.gpu_index,
        gpus.provider,
        gpus.site,
        gpu_hours.day_epoch,
        gpu_hours.hour_epoch,
        gpu_hours.busy_seconds,
        gpu_hours.allocated_idle_seconds,
        gpu_hours.unallocated_seconds,
        gpu_hours.down_seconds,
        gpu_hours.unobserved_seconds,
        coalesce(device_telemetry.device_utilization, device_telemetry.mig_utilization)
            as mean_utilization,
        device_telemetry.max_memory_used_mib,
        coalesce(device_telemetry.energy_wh, 0) as energy_wh,
        coalesce(node_costs.cost, 0) / gpus.gpus_per_node as cost,
        coalesce(node_costs.list_cost, 0) / gpus.gpus_per_node as list_cost,
        coalesce(node_costs.cost, 0) / gpus.gpus_per_node / 3600.0 as cost_per_second,
        coalesce(node_costs.list_cost, 0) / gpus.gpus_per_node / 3600.0 as list_cost_per_second
    from gpu_hours
    inner join gpus
        on gpus.gpu_uuid = gpu_hours.gpu_uuid
    left join device_telemetry
        on device_telemetry.gpu_uuid = gpu_hours.gpu_uuid
        and device_telemetry.hour_epoch = gpu_hours.hour_epoch
    left join node_costs
        on node_costs.host = gpus.host and node_costs.hour_epoch = gpu_hours.hour_epoch

)

select * from final
