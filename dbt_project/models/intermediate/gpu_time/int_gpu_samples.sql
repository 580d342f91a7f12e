-- One row per GPU unit and sample time: the long DCGM table pivoted to the values the
-- allocation needs. A unit is a whole physical GPU (`mig_instance` = '') or one MIG instance.
-- `hpc_job` duplicates of a sample collapse here (their labels are kept in
-- int_gpu_sample_labels; `is_labelled` says the sample has some). Utilisation: the site's
-- `utilization_signal` (config) when the sample carries it; otherwise (and under `auto`)
-- PROF_GR_ENGINE_ACTIVE (0-1) when exported, else GPU_UTIL / 100. Hosts outside the inventory
-- use `auto`. Stored by sample day: a run recomputes the days of its range
-- (macros/incremental.sql).
{{ incremental_by_day(day_batches=true) }}
with

samples as (

    select * from {{ ref('int_dcgm_samples') }}
    where {{ at_recomputed_times('sampled_at') }}

),

inventory as (

    select * from {{ ref('stg_config__inventory') }}

),

settings as (

    select * from {{ ref('stg_config__settings') }}

),

host_signals as (

    select
        inventory.host,
        max(settings.utilization_signal) as utilization_signal
    from inventory
    inner join settings
        on settings.site = inventory.site
    group by inventory.host

),

per_sample as (

    select
        gpu_uuid,
        coalesce(mig_instance, '') as mig_instance,
        max(mig_profile) as mig_profile,
        host,
        gpu_index,
        {{ to_epoch('sampled_at') }} as t,
        max(case when metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' then value end) as prof_gr_engine_active,
        max(case when metric = 'DCGM_FI_PROF_SM_ACTIVE' then value end) as prof_sm_active,
        max(case when metric = 'DCGM_FI_DEV_GPU_UTIL' then value end) as gpu_util_pct,
        max(case when metric = 'DCGM_FI_DEV_POWER_USAGE' then value end) as power_w,
        max(case when metric = 'DCGM_FI_DEV_FB_USED' then value end) as fb_used_mib,
        max(case when metric = 'DCGM_FI_DEV_XID_ERRORS' then value end) as xid,
        max(case when metric = 'DCGM_FI_DEV_SM_CLOCK' then value end) as sm_clock_mhz,
        -- the exporter named a job or pod holding the unit (its rows: int_gpu_sample_labels)
        max(case when hpc_job is not null or k8s_pod is not null then 1 else 0 end) = 1
            as is_labelled
    from samples
    group by gpu_uuid, coalesce(mig_instance, ''), host, gpu_index, {{ to_epoch('sampled_at') }}

),

final as (

    select
        per_sample.*,
        -- the unit's integer key, for the models that sort and join samples by unit
        -- (macros/adapters.sql, unit_key)
        {{ unit_key('per_sample.gpu_uuid', 'per_sample.mig_instance') }} as unit_key,
        floor(per_sample.t / 86400) * 86400 as day_epoch,
        coalesce(
            case coalesce(host_signals.utilization_signal, 'auto')
                when 'gr_engine_active' then per_sample.prof_gr_engine_active
                when 'sm_active' then per_sample.prof_sm_active
                when 'gpu_util' then per_sample.gpu_util_pct / 100
            end,
            per_sample.prof_gr_engine_active,
            per_sample.gpu_util_pct / 100
        ) as utilization,
        coalesce(per_sample.xid in {{ fatal_xids() }}, false) as is_fatal_xid
    from per_sample
    left join host_signals
        on host_signals.host = per_sample.host

)

select * from final
