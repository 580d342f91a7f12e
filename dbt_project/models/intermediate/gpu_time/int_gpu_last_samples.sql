-- Each series' last sample of each day (per GPU unit: a whole GPU or a MIG instance), with the
-- health counters' totals at that sample for whole GPUs (pivoted from int_dcgm_samples; null
-- for MIG instances and fields the GPU does not export). What a run carries into the first
-- day it recomputes: the last sample before that day is the last of the latest earlier day
-- with samples, read here from one row per series and day instead of from every earlier
-- sample (int_sample_pieces: what covers into the day; int_health_gpu_samples: the previous
-- values of the XID gauge and the counters). Stored by day (macros/incremental.sql): a day's
-- row depends on that day's samples only.
{{ incremental_by_day(day_batches=true) }}
with

samples as (

    select * from {{ ref('int_gpu_samples') }}
    where {{ in_recomputed_days('day_epoch') }}

),

last_times as (

    select gpu_uuid, mig_instance, day_epoch, max(t) as t
    from samples
    group by gpu_uuid, mig_instance, day_epoch

),

last_samples as (

    select samples.*
    from samples
    inner join last_times
        on last_times.gpu_uuid = samples.gpu_uuid
        and last_times.mig_instance = samples.mig_instance
        and last_times.t = samples.t

),

counters as (

    select
        dcgm.gpu_uuid,
        {{ to_epoch('dcgm.sampled_at') }} as t,
        max(case when dcgm.metric = 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL' then dcgm.value end)
            as ecc_sbe_total,
        max(case when dcgm.metric = 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL' then dcgm.value end)
            as ecc_dbe_total,
        max(case when dcgm.metric = 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS' then dcgm.value end)
            as correctable_remapped_rows_total,
        max(case when dcgm.metric = 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS' then dcgm.value end)
            as uncorrectable_remapped_rows_total
    from {{ ref('int_dcgm_samples') }} as dcgm
    inner join last_times
        on last_times.gpu_uuid = dcgm.gpu_uuid
        and last_times.mig_instance = ''
        and last_times.t = {{ to_epoch('dcgm.sampled_at') }}
    where {{ at_recomputed_times('dcgm.sampled_at') }}
        and dcgm.mig_instance is null
        and dcgm.metric in (
            'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
            'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
            'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
            'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS'
        )
    group by dcgm.gpu_uuid, {{ to_epoch('dcgm.sampled_at') }}

),

final as (

    select
        last_samples.*,
        counters.ecc_sbe_total,
        counters.ecc_dbe_total,
        counters.correctable_remapped_rows_total,
        counters.uncorrectable_remapped_rows_total
    from last_samples
    left join counters
        on counters.gpu_uuid = last_samples.gpu_uuid
        and last_samples.mig_instance = ''
        and counters.t = last_samples.t

)

select * from final
