-- What each run's GPU-hours cost: its busy and allocated-idle seconds at the GPU's rate.
-- Stored by day in the build warehouse (macros/incremental.sql, `incremental_published_by_day`;
-- the alerts read it from the published snapshot): a run rewrites the days int_gpu_hour_states
-- recomputed (from the first day of its range, or earlier when node costs or failure signals
-- changed), from the stored run GPU-hours of those days (int_run_gpu_hours).
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_published_by_day() }}
{%- set from_hour = first_recomputed_hour('int_gpu_hour_states_recompute_from') %}
with

run_hours as (

    -- a MIG instance's seconds are worth its fraction of the physical GPU (in the GPU's layout of
    -- that hour)
    select
        run_hours.run_id,
        run_hours.gpu_uuid,
        run_hours.mig_instance,
        run_hours.hour_epoch,
        run_hours.mapping,
        run_hours.held_seconds * units.unit_fraction as held_seconds,
        run_hours.busy_seconds * units.unit_fraction as busy_seconds,
        run_hours.allocated_idle_seconds * units.unit_fraction as allocated_idle_seconds,
        run_hours.down_seconds * units.unit_fraction as down_seconds,
        run_hours.unobserved_seconds * units.unit_fraction as unobserved_seconds,
        run_hours.energy_wh
    from {{ ref('int_run_gpu_hours') }} as run_hours
    inner join {{ ref('int_gpu_units') }} as units
        on units.gpu_uuid = run_hours.gpu_uuid
        and units.mig_instance = run_hours.mig_instance
        and units.hour_epoch = run_hours.hour_epoch
    where run_hours.hour_epoch >= {{ from_hour }}
        and units.hour_epoch >= {{ from_hour }}

),

states as (

    select * from {{ ref('int_gpu_hour_states') }}
    where hour_epoch >= {{ from_hour }}

),

node_costs as (

    select * from {{ ref('int_node_hour_costs') }}
    where hour_epoch >= {{ from_hour }}

),

final as (

    select
        run_hours.run_id,
        run_hours.gpu_uuid,
        run_hours.mig_instance,
        run_hours.hour_epoch,
        states.day_epoch,
        states.host,
        states.provider,
        run_hours.mapping,
        run_hours.held_seconds,
        run_hours.busy_seconds,
        run_hours.allocated_idle_seconds,
        run_hours.down_seconds,
        run_hours.unobserved_seconds,
        run_hours.energy_wh,
        (run_hours.busy_seconds + run_hours.allocated_idle_seconds) * states.cost_per_second
            as cost,
        (run_hours.busy_seconds + run_hours.allocated_idle_seconds) * states.list_cost_per_second
            as list_cost,
        run_hours.allocated_idle_seconds * states.cost_per_second as allocated_idle_cost,
        run_hours.energy_wh / 1000
            * (node_costs.energy_cost / nullif(node_costs.energy_kwh, 0)) as energy_cost
    from run_hours
    inner join states
        on states.gpu_uuid = run_hours.gpu_uuid and states.hour_epoch = run_hours.hour_epoch
    left join node_costs
        on node_costs.host = states.host and node_costs.hour_epoch = states.hour_epoch

)

select * from final
