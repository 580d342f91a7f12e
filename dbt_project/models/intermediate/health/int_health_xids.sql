-- XIDs per GPU and sample time, counted from the best signal a GPU exports that day:
--   `count`: DCGM_EXP_XID_ERRORS_COUNT (one series per XID code, label `xid` or `err_code`,
--     counting a code's XIDs over a sliding window): each increase of a code's count between
--     two samples is that many new XIDs (the previous sample of a day's first one is the
--     series' last before that day, int_health_xid_count_last_samples, however many days back);
--   `gauge`: on a GPU-day without the count, DCGM_FI_DEV_XID_ERRORS, which holds the last XID
--     only: a change to a non-zero value is one new XID (the same XID again, or several
--     between two samples, are invisible: a lower bound).
-- Stored by day (macros/incremental.sql): a day's rows depend on its samples and each series'
-- last sample before it, so a run rewrites the days of its range.
{{ incremental_by_day() }}
with

counted as (

    select counts.*, true as is_rewritten
    from ({{ xid_count_samples(ref('int_dcgm_samples')) }}) as counts

),

carried_in as (

    -- per series, its last sample of the latest day before the rewritten days (not a row of
    -- this run's output)
    select gpu_uuid, host, gpu_index, t, xid, value, false as is_rewritten
    from ({{ newest_before_range(ref('int_health_xid_count_last_samples'), ['gpu_uuid', 'xid']) }})
        as last_samples

),

count_increases as (

    select
        series.*,
        value - coalesce(lag(value) over (partition by gpu_uuid, xid order by t), 0) as increase
    from (
        select * from counted
        union all
        select * from carried_in
    ) as series

),

counting_gpu_days as (

    select distinct gpu_uuid, day_epoch
    from {{ ref('int_health_gpu_samples') }}
    where exports_xid_count and {{ in_recomputed_days('day_epoch') }}

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
    where is_rewritten and increase > 0

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
    left join counting_gpu_days
        on counting_gpu_days.gpu_uuid = samples.gpu_uuid
        and counting_gpu_days.day_epoch = samples.day_epoch
    where
        samples.is_new_xid
        and {{ in_recomputed_days('samples.day_epoch') }}
        and counting_gpu_days.gpu_uuid is null

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
