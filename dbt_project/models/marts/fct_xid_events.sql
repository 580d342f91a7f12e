-- XIDs per day, node, GPU and code (int_health_xids): from DCGM_EXP_XID_ERRORS_COUNT where the
-- GPU exports it that day, else from changes of the DCGM_FI_DEV_XID_ERRORS gauge (a lower
-- bound). Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run
-- rewrites the days of its range, as int_health_xids does.
{{ incremental_published_by_day(to_last_day=none) }}
with

xids as (

    select * from {{ ref('int_health_xids') }}
    where {{ in_recomputed_days('day_epoch') }}

),

final as (

    select
        cast({{ from_epoch('day_epoch') }} as date) as day,
        host,
        gpu_uuid,
        gpu_index,
        xid,
        cast(sum(xid_count) as integer) as xid_count,
        {{ from_epoch('min(t)') }} as first_seen_at,
        {{ from_epoch('max(t)') }} as last_seen_at,
        is_fatal,
        max(case when counted_from = 'gauge' then 1 else 0 end) = 1 as count_is_lower_bound,
        day_epoch
    from xids
    group by day_epoch, host, gpu_uuid, gpu_index, xid, is_fatal

)

select * from final
