-- Seconds of each GPU-hour by state (they sum to 3600), with its cost per second.
-- Per GPU unit (whole GPU or MIG instance) and hour:
--   busy / allocated_idle: what runs held (int_run_gpu_hours; held seconds no sample covers
--     count busy and unobserved);
--   down: fatal-XID coverage, plus seconds neither a sample covers nor a run holds while the GPU
--     has a failure signal (int_gpu_hour_gaps: a node event, or other GPUs of the node
--     reporting);
--   unallocated: the remaining covered seconds, plus unheld seconds no sample covers and no
--     failure signal explains (the node was not observed: also unobserved, and a telemetry gap).
-- then summed over the GPU's units of that hour (its MIG layout then) weighted by their fraction
-- of the GPU.
-- Stored by day (macros/incremental.sql): a run recomputes every day from the first of its range
-- on, like int_gpu_units, and from the first earlier day whose failure signals or node costs
-- changed since the last build (int_gpu_hour_states_recompute_from: a restated billing period, a node
-- event reported later), or every day when the GPUs changed.
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_by_day(to_last_day='int_gpu_hour_states_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_gpu_hour_states_recompute_from') %}
with

units as (

    select * from {{ ref('int_gpu_units') }}
    where hour_epoch >= {{ from_hour }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

hours as (

    select * from {{ ref('int_hours') }}
    where hour_epoch >= {{ from_hour }}

),

telemetry as (

    select * from {{ ref('int_gpu_hour_telemetry') }}
    where hour_epoch >= {{ from_hour }}

),

gaps as (

    select * from {{ ref('int_gpu_hour_gaps') }}
    where hour_epoch >= {{ from_hour }}

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
    where hour_epoch >= {{ from_hour }}
    group by gpu_uuid, mig_instance, hour_epoch

),

unit_inputs as (

    select
        units.gpu_uuid,
        units.mig_instance,
        units.unit_fraction,
        hours.day_epoch,
        hours.hour_epoch,
        coalesce(held.busy_seconds, 0) as busy_seconds,
        coalesce(held.allocated_idle_seconds, 0) as allocated_idle_seconds,
        coalesce(held.held_covered_ok_seconds, 0) as held_covered_ok_seconds,
        coalesce(held.unobserved_seconds, 0) as held_unobserved_seconds,
        coalesce(telemetry.covered_seconds, 0) as covered_seconds,
        coalesce(telemetry.fatal_seconds, 0) as fatal_seconds,
        -- seconds no sample covers and no run holds
        3600 - coalesce(telemetry.covered_seconds, 0) - coalesce(held.unobserved_seconds, 0)
            as unheld_uncovered_seconds,
        coalesce(gaps.unheld_signalled_seconds, 0) as unheld_signalled_seconds
    from units
    inner join hours
        on hours.hour_epoch = units.hour_epoch
    left join telemetry
        on telemetry.gpu_uuid = units.gpu_uuid
        and telemetry.mig_instance = units.mig_instance
        and telemetry.hour_epoch = hours.hour_epoch
    left join held
        on held.gpu_uuid = units.gpu_uuid
        and held.mig_instance = units.mig_instance
        and held.hour_epoch = hours.hour_epoch
    left join gaps
        on gaps.gpu_uuid = units.gpu_uuid
        and gaps.mig_instance = units.mig_instance
        and gaps.hour_epoch = hours.hour_epoch

),

unit_hours as (

    select
        gpu_uuid,
        mig_instance,
        unit_fraction,
        day_epoch,
        hour_epoch,
        busy_seconds,
        allocated_idle_seconds,
        covered_seconds - fatal_seconds - held_covered_ok_seconds
            + unheld_uncovered_seconds - least(unheld_signalled_seconds, unheld_uncovered_seconds)
            as unallocated_seconds,
        fatal_seconds + least(unheld_signalled_seconds, unheld_uncovered_seconds) as down_seconds,
        held_unobserved_seconds + unheld_uncovered_seconds
            - least(unheld_signalled_seconds, unheld_uncovered_seconds) as unobserved_seconds,
        unheld_uncovered_seconds - least(unheld_signalled_seconds, unheld_uncovered_seconds)
            as telemetry_gap_seconds
    from unit_inputs

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
        sum(unobserved_seconds * unit_fraction) as unobserved_seconds,
        sum(telemetry_gap_seconds * unit_fraction) as telemetry_gap_seconds
    from unit_hours
    group by gpu_uuid, day_epoch, hour_epoch

),

device_telemetry as (

    select
        telemetry.gpu_uuid,
        telemetry.hour_epoch,
        sum(telemetry.energy_wh) as energy_wh,
        max(case when telemetry.mig_instance = '' then telemetry.mean_utilization end)
            as device_utilization,
        -- a MIG GPU: its instances' utilisation weighted by their slice fraction (slices no
        -- instance uses add nothing), so 0 <= value <= 1
        sum(
            case
                when telemetry.mig_instance <> ''
                    then telemetry.mean_utilization * units.unit_fraction
            end
        ) as mig_utilization,
        max(telemetry.max_memory_used_mib) as max_memory_used_mib
    from telemetry
    left join units
        on units.gpu_uuid = telemetry.gpu_uuid
        and units.mig_instance = telemetry.mig_instance
        and units.hour_epoch = telemetry.hour_epoch
    group by telemetry.gpu_uuid, telemetry.hour_epoch

),

node_costs as (

    select * from {{ ref('int_node_hour_costs') }}
    where hour_epoch >= {{ from_hour }}

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
        gpu_hours.telemetry_gap_seconds,
        coalesce(device_telemetry.device_utilization, device_telemetry.mig_utilization)
            as mean_utilization,
        device_telemetry.max_memory_used_mib,
        coalesce(device_telemetry.energy_wh, 0) as energy_wh,
        coalesce(node_costs.cost, 0) / gpus.gpus_per_node as cost,
        coalesce(node_costs.list_cost, 0) / gpus.gpus_per_node as list_cost,
        coalesce(node_costs.cost, 0) / gpus.gpus_per_node / 3600 as cost_per_second,
        coalesce(node_costs.list_cost, 0) / gpus.gpus_per_node / 3600 as list_cost_per_second
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
