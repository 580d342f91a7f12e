-- XIDs per GPU and sample time, counted from the best signal a GPU exports:
--   `count`: DCGM_EXP_XID_ERRORS_COUNT (one series per XID code, label `xid` or `err_code`,
--     counting a code's XIDs over a sliding window): each increase of a code's count between
--     two samples is that many new XIDs;
--   `gauge`: otherwise DCGM_FI_DEV_XID_ERRORS, which holds the last XID only: a change to a
--     non-zero value is one new XID (the same XID again, or several between two samples, are
--     invisible: a lower bound).
with

counted as (

    select
        gpu_uuid,
        host,
        gpu_index,
        {{ to_epoch('sampled_at') }} as t,
        cast(coalesce(
            {{ json_text('labels', "'xid'") }}, {{ json_text('labels', "'err_code'") }}
        ) as integer) as xid,
        value
    from {{ ref('int_dcgm_samples') }}
    where metric = 'DCGM_EXP_XID_ERRORS_COUNT' and mig_instance is null

),

count_increases as (

    select
        counted.*,
        value - coalesce(lag(value) over (partition by gpu_uuid, xid order by t), 0) as increase
    from counted
    where xid is not null

),

counting_gpus as (

    select distinct gpu_uuid from {{ ref('int_health_gpu_samples') }} where exports_xid_count

),

from_count as (

    select
        gpu_uuid,
        host,
        gpu_index,
        t,
        xid,
        cast(increase as integer) as xid_count,
        'count' as counted_from
    from count_increases
    where increase > 0

),

from_gauge as (

    select
        samples.gpu_uuid,
        samples.host,
        samples.gpu_index,
        samples.t,
        cast(samples.xid as integer) as xid,
        1 as xid_count,
        'gauge' as counted_from
    from {{ ref('int_health_gpu_samples') }} as samples
    where
        samples.is_new_xid
        and samples.gpu_uuid not in (select gpu_uuid from counting_gpus)

),

unioned as (

    select * from from_count
    union all
    select * from from_gauge

),

final as (

    select
        unioned.*,
        floor(t / 86400) * 86400 as day_epoch,
        xid in {{ fatal_xids() }} as is_fatal
    from unioned

)

select * from final
