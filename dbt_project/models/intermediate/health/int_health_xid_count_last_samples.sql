-- Each DCGM_EXP_XID_ERRORS_COUNT series' (a GPU and an XID code's) last sample of each day:
-- what a run carries into the first day it recomputes (int_health_xids compares a day's first
-- count of a code with the last one before it, however many days earlier), read from one row
-- per series and day instead of from every earlier sample. Stored by day
-- (macros/incremental.sql): a day's row depends on that day's samples only.
{{ incremental_by_day() }}
with

by_day as (

    select
        counts.*,
        floor(t / 86400) * 86400 as day_epoch
    from ({{ xid_count_samples(ref('int_dcgm_samples')) }}) as counts

),

last_times as (

    select gpu_uuid, xid, day_epoch, max(t) as t
    from by_day
    group by gpu_uuid, xid, day_epoch

),

final as (

    -- two rows of one series at its last time (a sample exported twice): the higher count
    select
        by_day.gpu_uuid,
        by_day.xid,
        by_day.day_epoch,
        by_day.t,
        max(by_day.host) as host,
        max(by_day.gpu_index) as gpu_index,
        max(by_day.value) as value
    from by_day
    inner join last_times
        on last_times.gpu_uuid = by_day.gpu_uuid
        and last_times.xid = by_day.xid
        and last_times.t = by_day.t
    group by by_day.gpu_uuid, by_day.xid, by_day.day_epoch, by_day.t

)

select * from final
