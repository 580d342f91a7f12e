-- GPU energy from the DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter (mJ since boot, a counter):
-- one row per GPU unit (whole GPU, or MIG instance) and sample, with `energy_delta_mj`, the
-- energy counted since the unit's previous sample. The counter restarts at 0 when the GPU or
-- its node reboots or the driver reloads: a value below the previous one is a reset, and the
-- delta is then the new value (what was counted since the reset), as Prometheus' increase()
-- counts it. A unit's first sample has no delta (null). hpc_job / pod duplicates of one sample
-- collapse first, so nothing is counted twice. Deltas run across day partitions (the landing
-- keeps the counter as exported; see docs/landing.md).
with

samples as (

    select
        host,
        gpu_uuid,
        gpu_index,
        coalesce(mig_instance, '') as mig_instance,
        {{ to_epoch('sampled_at') }} as t,
        max(value) as counter_mj
    from {{ ref('int_dcgm_samples') }}
    where metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'
    group by 1, 2, 3, 4, 5

),

ordered as (

    select
        *,
        lag(counter_mj) over (
            partition by host, gpu_uuid, mig_instance order by t
        ) as previous_mj
    from samples

),

final as (

    select
        host,
        gpu_uuid,
        gpu_index,
        mig_instance,
        t,
        {{ from_epoch('t') }} as sampled_at,
        counter_mj,
        coalesce(counter_mj < previous_mj, false) as is_reset,
        {{ counter_increase('counter_mj', 'previous_mj', first='null') }} as energy_delta_mj
    from ordered

)

select * from final
