-- One row per physical GPU and sample time with the signals of the fleet-health marts:
-- utilisation, SM clock and the XID gauge (from int_gpu_samples, whole GPUs: MIG instance
-- series repeat device-level fields), plus the fields only health needs, pivoted here from the
-- few samples that carry them: the clock throttle / event reasons bitmask, the volatile ECC
-- counters, the remapped-rows counters and row-remap failure gauge, and whether
-- DCGM_EXP_XID_ERRORS_COUNT is exported. Each sample covers
-- [t, min(next sample's t, t + stale_after)) like int_sample_pieces' intervals (no day clipping here:
-- int_health_node_day_signals splits the coverage at midnight).
-- Counters become increases since the GPU's previous sample (its first sample: 0): volatile ECC
-- counters restart when the driver reloads, so after a drop the new value is the increase;
-- remapped-row counters are persistent (kept across reboots), so a drop adds nothing.
-- Stored by sample day (macros/incremental.sql): a day's rows depend on its samples, the GPU's
-- last sample before it (int_gpu_last_samples: the counters' and the XID gauge's previous
-- values) and its first sample after it (a day's last sample is valid until then), so a run
-- rewrites the days of its range and the day before it (whose last sample the range's first
-- sample ends).
{{ incremental_by_day(days_before=1, day_batches=true) }}
with

gpu_samples as (

    select gpu_uuid, host, gpu_index, t, utilization, sm_clock_mhz, xid
    from {{ ref('int_gpu_samples') }}
    where mig_instance = '' and {{ in_recomputed_days('day_epoch', days_before=1) }}

),

carried_in as (

    -- per GPU, the last sample of the latest day before the rewritten days with samples
    -- (int_gpu_last_samples): the first rewritten sample's previous values (not a row of this
    -- run's output)
    select *
    from (
        {{ newest_before_range(
            ref('int_gpu_last_samples'), ['gpu_uuid'], days_before=1, where="mig_instance = ''"
        ) }}
    ) as last_samples

),

cadence as (

    -- a GPU's samples of a day stay valid as long as its device series' that day
    -- (int_gpu_series_cadence)
    select gpu_uuid, day_epoch, max(stale_after_seconds) as stale_after
    from {{ ref('int_gpu_series_cadence') }}
    where {{ in_recomputed_days('day_epoch', days_before=1) }}
    group by gpu_uuid, day_epoch

),

next_after as (

    -- per GPU, the first sample after the rewritten days: where the last rewritten one ends,
    -- when that is sooner than its staleness. So only samples within the longest staleness
    -- of the rewritten days can matter (a later one leaves the sample valid for its
    -- staleness, as none does); without that bound a full build in batches of days read
    -- every later day's samples again in each batch
    select gpu_uuid, min(t) as t
    from {{ ref('int_gpu_samples') }}
    where mig_instance = ''
        and t >= {{ after_recomputed_epoch() }}
        and t < {{ after_recomputed_epoch() }}
            + (select coalesce(max(stale_after), 0) from cadence)
    group by gpu_uuid

),

dcgm_samples as (

    select * from {{ ref('int_dcgm_samples') }}
    where {{ at_recomputed_times('sampled_at', days_before=1) }}

),

health_fields as (

    select
        gpu_uuid,
        {{ to_epoch('sampled_at') }} as t,
        max(case
            when metric in ('DCGM_FI_DEV_CLOCK_THROTTLE_REASONS', 'DCGM_FI_DEV_CLOCKS_EVENT_REASONS')
                then value
        end) as throttle_reasons,
        max(case when metric = 'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL' then value end) as ecc_sbe_total,
        max(case when metric = 'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL' then value end) as ecc_dbe_total,
        max(case when metric = 'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS' then value end)
            as correctable_remapped_rows_total,
        max(case when metric = 'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS' then value end)
            as uncorrectable_remapped_rows_total,
        max(case when metric = 'DCGM_FI_DEV_ROW_REMAP_FAILURE' then value end)
            as row_remap_failure,
        max(case when metric = 'DCGM_EXP_XID_ERRORS_COUNT' then 1 else 0 end) = 1
            as exports_xid_count
    from dcgm_samples
    where
        mig_instance is null
        and metric in (
            'DCGM_FI_DEV_CLOCK_THROTTLE_REASONS',
            'DCGM_FI_DEV_CLOCKS_EVENT_REASONS',
            'DCGM_FI_DEV_ECC_SBE_VOL_TOTAL',
            'DCGM_FI_DEV_ECC_DBE_VOL_TOTAL',
            'DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS',
            'DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS',
            'DCGM_FI_DEV_ROW_REMAP_FAILURE',
            'DCGM_EXP_XID_ERRORS_COUNT'
        )
    group by gpu_uuid, {{ to_epoch('sampled_at') }}
    union all
    -- the carried-in sample's counter totals (the throttle reasons and the row-remap failure
    -- gauge of a row not output do not matter)
    select
        gpu_uuid,
        t,
        cast(null as double) as throttle_reasons,
        ecc_sbe_total,
        ecc_dbe_total,
        correctable_remapped_rows_total,
        uncorrectable_remapped_rows_total,
        cast(null as double) as row_remap_failure,
        false as exports_xid_count
    from carried_in

),

all_samples as (

    select gpu_samples.*, true as is_rewritten from gpu_samples
    union all
    select gpu_uuid, host, gpu_index, t, utilization, sm_clock_mhz, xid, false as is_rewritten
    from carried_in

),

joined as (

    select
        gpu_samples.is_rewritten,
        gpu_samples.gpu_uuid,
        gpu_samples.host,
        gpu_samples.gpu_index,
        gpu_samples.t,
        gpu_samples.utilization,
        gpu_samples.sm_clock_mhz,
        gpu_samples.xid,
        health_fields.throttle_reasons,
        health_fields.ecc_sbe_total,
        health_fields.ecc_dbe_total,
        health_fields.correctable_remapped_rows_total,
        health_fields.uncorrectable_remapped_rows_total,
        health_fields.row_remap_failure,
        coalesce(health_fields.exports_xid_count, false) as exports_xid_count
    from all_samples as gpu_samples
    left join health_fields
        on health_fields.gpu_uuid = gpu_samples.gpu_uuid and health_fields.t = gpu_samples.t

),

ordered as (

    select
        joined.*,
        coalesce(
            lead(joined.t) over (partition by joined.gpu_uuid order by joined.t), next_after.t
        ) as next_t,
        lag(joined.xid) over (partition by joined.gpu_uuid order by joined.t)
            as prev_xid,
        lag(joined.ecc_sbe_total) over (partition by joined.gpu_uuid order by joined.t)
            as prev_ecc_sbe_total,
        lag(joined.ecc_dbe_total) over (partition by joined.gpu_uuid order by joined.t)
            as prev_ecc_dbe_total,
        lag(joined.correctable_remapped_rows_total)
            over (partition by joined.gpu_uuid order by joined.t)
            as prev_correctable_remapped_rows_total,
        lag(joined.uncorrectable_remapped_rows_total)
            over (partition by joined.gpu_uuid order by joined.t)
            as prev_uncorrectable_remapped_rows_total
    from joined
    left join next_after
        on next_after.gpu_uuid = joined.gpu_uuid

),

final as (

    select
        ordered.gpu_uuid,
        ordered.host,
        ordered.gpu_index,
        ordered.t,
        floor(ordered.t / 86400) * 86400 as day_epoch,
        least(
            coalesce(ordered.next_t, ordered.t + cadence.stale_after),
            ordered.t + cadence.stale_after
        ) as valid_to,
        ordered.utilization,
        ordered.sm_clock_mhz,
        cast(ordered.xid as bigint) as xid,
        ordered.exports_xid_count,
        -- the gauge holds the last XID: a new one shows as a change to a non-zero value
        -- (the same XID twice in a row is invisible, hence a lower bound)
        coalesce(ordered.xid, 0) <> 0
            and coalesce(ordered.prev_xid, 0) <> ordered.xid as is_new_xid,
        cast(ordered.throttle_reasons as bigint) as throttle_reasons,
        -- volatile counters restart from 0 when the driver reloads or the GPU is reset
        {{ counter_increase('ordered.ecc_sbe_total', 'ordered.prev_ecc_sbe_total') }}
            as ecc_sbe_errors,
        {{ counter_increase('ordered.ecc_dbe_total', 'ordered.prev_ecc_dbe_total') }}
            as ecc_dbe_errors,
        -- persistent counters: a drop (a replaced board, a blank) is no new remapped row
        {{ counter_increase(
            'ordered.correctable_remapped_rows_total',
            'ordered.prev_correctable_remapped_rows_total',
            restarts=false
        ) }} as correctable_remapped_rows,
        {{ counter_increase(
            'ordered.uncorrectable_remapped_rows_total',
            'ordered.prev_uncorrectable_remapped_rows_total',
            restarts=false
        ) }} as uncorrectable_remapped_rows,
        cast(ordered.row_remap_failure as integer) as row_remap_failure
    from ordered
    inner join cadence
        on cadence.gpu_uuid = ordered.gpu_uuid
        and cadence.day_epoch = floor(ordered.t / 86400) * 86400
    where ordered.is_rewritten

)

select * from final
