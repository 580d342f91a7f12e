-- What each run did with the GPUs it held in each UTC hour, the evidence of the release_idle
-- and right_size_mig recommendations (docs/metrics.md, "Recommendations"): held, busy and
-- allocated-idle GPU-seconds, direct and allocated-idle cost (int_run_gpu_hour_costs), the
-- held-weighted mean DCGM utilisation and the highest memory used of its GPUs
-- (int_gpu_hour_states), whether every GPU it held was a whole GPU (no MIG instance) and the
-- GPU model (int_gpus; the first in name order when it held several models).
-- Stored by day in the build warehouse (macros/incremental.sql, `incremental_published_by_day`)
-- with the runs' GPU-hour costs it sums: a run rewrites the days int_gpu_hour_states
-- recomputed (from the first day of its range, or earlier when node costs or failure signals
-- changed; every day when the GPUs changed).
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_published_by_day() }}
{%- set from_hour = first_recomputed_hour('int_gpu_hour_states_recompute_from') %}
with

run_hours as (

    select * from {{ ref('int_run_gpu_hour_costs') }}
    where hour_epoch >= {{ from_hour }}

),

gpu_states as (

    select gpu_uuid, hour_epoch, mean_utilization, max_memory_used_mib
    from {{ ref('int_gpu_hour_states') }}
    where hour_epoch >= {{ from_hour }}

),

gpus as (

    select gpu_uuid, gpu_model from {{ ref('int_gpus') }}

),

final as (

    select
        run_hours.run_id,
        run_hours.hour_epoch,
        min(run_hours.provider) as provider,
        min(gpus.gpu_model) as gpu_model,
        min(case when coalesce(run_hours.mig_instance, '') = '' then 1 else 0 end) = 1
            as whole_gpus,
        sum(run_hours.held_seconds) as held_seconds,
        sum(run_hours.busy_seconds) as busy_seconds,
        sum(run_hours.allocated_idle_seconds) as allocated_idle_seconds,
        sum(run_hours.cost) as cost,
        sum(run_hours.allocated_idle_cost) as allocated_idle_cost,
        sum(run_hours.held_seconds * gpu_states.mean_utilization)
            / nullif(sum(
                case when gpu_states.mean_utilization is not null
                    then run_hours.held_seconds end
            ), 0) as mean_utilization,
        max(gpu_states.max_memory_used_mib) as max_memory_used_mib,
        -- the partition (Spark's last column)
        run_hours.day_epoch
    from run_hours
    left join gpu_states
        on gpu_states.gpu_uuid = run_hours.gpu_uuid
        and gpu_states.hour_epoch = run_hours.hour_epoch
    left join gpus
        on gpus.gpu_uuid = run_hours.gpu_uuid
    group by run_hours.run_id, run_hours.hour_epoch, run_hours.day_epoch

)

select * from final
