-- One row per physical GPU and accounted hour: seconds by state (summing to 3600), telemetry
-- and the GPU's share of its node's cost. Stored by day (macros/incremental.sql,
-- `incremental_published_by_day`): a run rewrites the days int_gpu_hour_states recomputed.
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_published_by_day() }}
{%- set from_hour = first_recomputed_hour('int_gpu_hour_states_recompute_from') %}
with

states as (

    select * from {{ ref('int_gpu_hour_states') }}
    where hour_epoch >= {{ from_hour }}

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
        site,
        -- whole seconds on every engine (a Spark partition value, a DuckDB key alike)
        cast(day_epoch as bigint) as day_epoch
    from states

)

select * from final
