-- GPU energy from the DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION counter (mJ since boot, a counter):
-- one row per GPU unit (whole GPU, or MIG instance) and sample, with `energy_delta_mj`, the
-- energy counted since the unit's previous sample. The counter restarts at 0 when the GPU or
-- its node reboots or the driver reloads: a value below the previous one is a reset, and the
-- delta is then the new value (what was counted since the reset), as Prometheus' increase()
-- counts it. A unit's first sample has no delta (null). hpc_job / pod duplicates of one sample
-- collapse first, so nothing is counted twice. Deltas run across day partitions (the landing
-- keeps the counter as exported; see docs/landing.md). Stored by sample day: a run recomputes
-- the days of its range, each unit's first sample in it compared with the unit's last sample
-- before it (int_gpu_energy_last_samples: a row per unit and earlier day, not every sample).
{{ incremental_by_day() }}
with

recomputed as (

    select
        host,
        gpu_uuid,
        gpu_index,
        coalesce(mig_instance, '') as mig_instance,
        {{ to_epoch('sampled_at') }} as t,
        max(value) as counter_mj
    from {{ ref('int_dcgm_samples') }}
    where metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'
        and {{ at_recomputed_times('sampled_at') }}
    group by 1, 2, 3, 4, 5

),

last_before as (

    -- each unit's last sample before the first recomputed day (none on a full build)
    select host, gpu_uuid, mig_instance, t, counter_mj
    from (
        {{ newest_before_range(
            ref('int_gpu_energy_last_samples'), ['host', 'gpu_uuid', 'mig_instance']
        ) }}
    ) as last_samples

),

samples as (

    select recomputed.*, false as is_carried_in from recomputed
    union all
    select
        host, gpu_uuid, cast(null as integer) as gpu_index, mig_instance, t, counter_mj,
        true as is_carried_in
    from last_before

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
        {{ counter_increase('counter_mj', 'previous_mj', first='null') }} as energy_delta_mj,
        floor(t / 86400) * 86400 as day_epoch
    from ordered
    where not is_carried_in

)

select * from final
