-- One row per physical GPU and sample time with the signals of the fleet-health marts:
-- utilisation (PROF_GR_ENGINE_ACTIVE, else GPU_UTIL / 100), SM clock, the XID gauge (and whether
-- DCGM_EXP_XID_ERRORS_COUNT is exported at the sample), the clock
-- throttle / event reasons bitmask and the ECC counters; each sample covers
-- [t, min(next sample's t, t + stale_after)) like int_sample_intervals. MIG instances are
-- left out (their samples repeat device-level fields).
with

samples as (

    select * from {{ ref('stg_dcgm__samples') }}
    where
        mig_instance is null
        and metric in (
            'DCGM_FI_PROF_GR_ENGINE_ACTIVE',
            'DCGM_FI_DEV_GPU_UTIL',
            'DCGM_FI_DEV_SM_CLOCK',
            'DCGM_FI_DEV_XID_ERRORS',
            'DCGM_EXP_XID_ERRORS_COUNT',
            'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
            'DCGM_FI_DEV_CLOCKS_EVENT_REASONS',
            'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
            'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL'
        )

),

settings as (

    select max(stale_after_seconds) as stale_after from {{ ref('stg_config__settings') }}

),

per_sample as (

    select
        gpu_uuid,
        host,
        gpu_index,
        {{ to_epoch('sampled_at') }} as t,
        max(case when metric = 'DCGM_FI_PROF_GR_ENGINE_ACTIVE' then value end) as prof_gr_engine_active,
        max(case when metric = 'DCGM_FI_DEV_GPU_UTIL' then value end) as gpu_util_pct,
        max(case when metric = 'DCGM_FI_DEV_SM_CLOCK' then value end) as sm_clock_mhz,
        max(case when metric = 'DCGM_FI_DEV_XID_ERRORS' then value end) as xid,
        max(case when metric = 'DCGM_EXP_XID_ERRORS_COUNT' then 1 else 0 end) = 1
            as exports_xid_count,
        max(case
            when metric in ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS')
                then value
        end) as throttle_reasons,
        max(case when metric = 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL' then value end) as ecc_sbe_total,
        max(case when metric = 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL' then value end) as ecc_dbe_total
    from samples
    group by gpu_uuid, host, gpu_index, {{ to_epoch('sampled_at') }}

),

ordered as (

    select
        per_sample.*,
        lead(t) over (partition by gpu_uuid order by t) as next_t,
        lag(xid) over (partition by gpu_uuid order by t) as prev_xid,
        lag(ecc_sbe_total) over (partition by gpu_uuid order by t) as prev_ecc_sbe_total,
        lag(ecc_dbe_total) over (partition by gpu_uuid order by t) as prev_ecc_dbe_total
    from per_sample

),

final as (

    select
        ordered.gpu_uuid,
        ordered.host,
        ordered.gpu_index,
        ordered.t,
        floor(ordered.t / 86400) * 86400 as day_epoch,
        least(
            coalesce(ordered.next_t, ordered.t + coalesce(settings.stale_after, 120)),
            ordered.t + coalesce(settings.stale_after, 120)
        ) as valid_to,
        coalesce(ordered.prof_gr_engine_active, ordered.gpu_util_pct / 100.0) as utilization,
        ordered.sm_clock_mhz,
        cast(ordered.xid as bigint) as xid,
        ordered.exports_xid_count,
        -- the gauge holds the last XID: a new one shows as a change to a non-zero value
        -- (the same XID twice in a row is invisible, hence a lower bound)
        coalesce(ordered.xid, 0) <> 0
            and coalesce(ordered.prev_xid, 0) <> ordered.xid as is_new_xid,
        cast(ordered.throttle_reasons as bigint) as throttle_reasons,
        -- volatile counters reset when the driver reloads: after a drop, the new value
        case
            when ordered.ecc_sbe_total is null then null
            when ordered.prev_ecc_sbe_total is null then 0
            when ordered.ecc_sbe_total >= ordered.prev_ecc_sbe_total
                then ordered.ecc_sbe_total - ordered.prev_ecc_sbe_total
            else ordered.ecc_sbe_total
        end as ecc_sbe_errors,
        case
            when ordered.ecc_dbe_total is null then null
            when ordered.prev_ecc_dbe_total is null then 0
            when ordered.ecc_dbe_total >= ordered.prev_ecc_dbe_total
                then ordered.ecc_dbe_total - ordered.prev_ecc_dbe_total
            else ordered.ecc_dbe_total
        end as ecc_dbe_errors
    from ordered
    cross join settings

)

select * from final
