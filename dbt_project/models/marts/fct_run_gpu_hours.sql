-- One row per run, GPU (or MIG instance) and hour it held: the run page's GPUs, utilisation
-- over time and cost by hour (int_run_gpu_hour_costs), with the GPU's index and its mean
-- utilisation in the hour (int_gpu_hour_states; the whole GPU's for a MIG instance).
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the
-- days int_gpu_hour_states and int_run_gpu_hour_costs recomputed.
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_published_by_day() }}
{%- set from_hour = first_recomputed_hour('int_gpu_hour_states_recompute_from') %}
with

run_hours as (

    select * from {{ ref('int_run_gpu_hour_costs') }}
    where hour_epoch >= {{ from_hour }}

),

gpu_hours as (

    select gpu_uuid, hour_epoch, gpu_index, mean_utilization
    from {{ ref('int_gpu_hour_states') }}
    where hour_epoch >= {{ from_hour }}

),

final as (

    select
        run_hours.run_id,
        run_hours.gpu_uuid,
        run_hours.mig_instance,
        {{ from_epoch('run_hours.hour_epoch') }} as hour,
        run_hours.host,
        gpu_hours.gpu_index,
        run_hours.provider,
        run_hours.mapping,
        run_hours.held_seconds,
        run_hours.busy_seconds,
        run_hours.allocated_idle_seconds,
        run_hours.down_seconds,
        run_hours.unobserved_seconds,
        gpu_hours.mean_utilization,
        run_hours.energy_wh,
        run_hours.cost,
        run_hours.allocated_idle_cost,
        run_hours.energy_cost,
        -- whole seconds on every engine (a Spark partition value, a DuckDB key alike)
        cast(run_hours.day_epoch as bigint) as day_epoch
    from run_hours
    left join gpu_hours
        on gpu_hours.gpu_uuid = run_hours.gpu_uuid
        and gpu_hours.hour_epoch = run_hours.hour_epoch

)

select * from final
