-- XIDs per day, node, GPU and code (int_health_xids): from DCGM_EXP_XID_ERRORS_COUNT where the
-- GPU exports it, else from changes of the DCGM_FI_DEV_XID_ERRORS gauge (a lower bound).
with

xids as (

    select * from {{ ref('int_health_xids') }}

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
        max(case when counted_from = 'gauge' then 1 else 0 end) = 1 as count_is_lower_bound
    from xids
    group by day_epoch, host, gpu_uuid, gpu_index, xid, is_fatal

)

select * from final
