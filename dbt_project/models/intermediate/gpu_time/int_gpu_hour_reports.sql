-- Which GPU units reported in each hour, and where: one row per GPU unit, host, GPU index and
-- hour in which it has a sample (int_gpu_samples), with its MIG profile and sample count. What
-- the GPU list (int_gpus: the uuid reported for each inventory slot) and the MIG layout per hour
-- (int_gpu_units) read instead of every sample. An hour lies within its day: stored by day, a
-- run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day() }}
with

samples as (

    select * from {{ ref('int_gpu_samples') }}
    where {{ in_recomputed_days('day_epoch') }}

),

final as (

    select
        gpu_uuid,
        mig_instance,
        host,
        gpu_index,
        floor(t / 3600) * 3600 as hour_epoch,
        max(mig_profile) as mig_profile,
        count(*) as samples,
        day_epoch
    from samples
    group by gpu_uuid, mig_instance, host, gpu_index, floor(t / 3600) * 3600, day_epoch

)

select * from final
