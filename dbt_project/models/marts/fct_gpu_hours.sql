-- One row per physical GPU and accounted hour: seconds by state (summing to 3600), telemetry
-- and the GPU's share of its node's cost.
with

states as (

    select * from {{ ref('int_gpu_hour_states') }}

),

final as (

    select
        gpu_uuid,
        host,
        gpu_index,
        {{ from_epoch('hour_epoch') }} as hour,
        busy_seconds,
        allocated_idle_seconds,
        unallocated_seconds,
        down_seconds,
        unobserved_seconds,
        -- unheld seconds no sample covers and no failure signal explains (inside unallocated)
        telemetry_gap_seconds,
        mean_utilization,
        max_memory_used_mib,
        energy_wh,
        cost,
        list_cost,
        provider,
        site
    from states

)

select * from final
