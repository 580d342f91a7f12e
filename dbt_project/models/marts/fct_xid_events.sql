-- XIDs per day, node, GPU and code, counted from changes of the DCGM_FI_DEV_XID_ERRORS gauge
-- to a non-zero value (the gauge holds the last XID only: a lower bound).
with

samples as (

    select * from {{ ref('int_health_gpu_samples') }}
    where is_new_xid

),

final as (

    select
        cast({{ from_epoch('day_epoch') }} as date) as day,
        host,
        gpu_uuid,
        gpu_index,
        xid,
        count(*) as xid_count,
        {{ from_epoch('min(t)') }} as first_seen_at,
        {{ from_epoch('max(t)') }} as last_seen_at,
        xid in {{ fatal_xids() }} as is_fatal,
        true as count_is_lower_bound
    from samples
    group by day_epoch, host, gpu_uuid, gpu_index, xid

)

select * from final
