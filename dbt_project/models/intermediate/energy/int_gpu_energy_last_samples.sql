-- The last DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION sample of each GPU unit on each UTC day (the
-- highest value of its hpc_job / pod duplicates): what the unit's next sample after that day is
-- compared with (int_gpu_energy_counter). Stored by day: a run recomputes the days of its range
-- (macros/incremental.sql).
{{ incremental_by_day() }}
with

samples as (

    select
        host,
        gpu_uuid,
        coalesce(mig_instance, '') as mig_instance,
        {{ to_epoch('sampled_at') }} as t,
        max(value) as counter_mj
    from {{ ref('int_dcgm_samples') }}
    where metric = 'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION'
        and {{ at_recomputed_times('sampled_at') }}
    group by 1, 2, 3, 4

),

ranked as (

    select
        samples.*,
        floor(t / 86400) * 86400 as day_epoch,
        row_number() over (
            partition by host, gpu_uuid, mig_instance, floor(t / 86400) order by t desc
        ) as newest_first
    from samples

),

final as (

    select host, gpu_uuid, mig_instance, t, counter_mj, day_epoch
    from ranked
    where newest_first = 1

)

select * from final
