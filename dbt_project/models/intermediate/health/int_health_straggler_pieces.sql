-- The straggler episodes of each day, cut at midnight: maximal runs of consecutive trailing
-- buckets of one GPU in one run, per metric (`utilization` | `sm_clock`), among the day's
-- buckets (int_health_straggler_buckets: a bucket never spans midnight). A piece ends at a
-- bucket that does not trail, where the GPU's samples stop (a gap longer than the stale
-- window: not observed is not counted as straggling), or at the day's last bucket;
-- int_health_straggler_episodes joins a piece that runs to its day's last bucket with the next
-- day's piece that starts at that day's first bucket, when the buckets touch. Stored by day: a
-- run rewrites the days int_health_straggler_buckets rewrites (its range and the day before
-- it; macros/incremental.sql). A full build runs it in day batches, as the buckets
-- (macros/day_batches.sql): over a month of 1,024 GPUs its windows over every bucket of the
-- history at once took 7 GB.
{{ incremental_by_day(days_before=1, day_batches=true) }}
with

all_buckets as (

    select * from {{ ref('int_health_straggler_buckets') }}
    where {{ in_recomputed_days('day_epoch', days_before=1) }}

),

trailing_days as (

    -- a piece is made of trailing buckets, so only the days of a run's GPU with one need
    -- numbering (at 1,024 GPUs x 7 days about a fifth of them: 1.2 M of 6.4 M buckets; the
    -- windows below sorted every bucket of the range twice, once per metric)
    select run_id, gpu_uuid, day_epoch
    from all_buckets
    group by run_id, gpu_uuid, day_epoch
    having max(case when utilization_trails or sm_clock_trails then 1 else 0 end) = 1

),

buckets as (

    -- every bucket of such a day: the numbering needs the buckets that do not trail too
    select all_buckets.*
    from all_buckets
    inner join trailing_days
        on trailing_days.run_id = all_buckets.run_id
        and trailing_days.gpu_uuid = all_buckets.gpu_uuid
        and trailing_days.day_epoch = all_buckets.day_epoch

),

flags as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        day_epoch,
        'utilization' as metric,
        t_from,
        t_to,
        utilization as value,
        median_other_utilization as median_other,
        utilization_trails as trails
    from buckets
    union all
    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        day_epoch,
        'sm_clock' as metric,
        t_from,
        t_to,
        sm_clock_mhz as value,
        median_other_sm_clock_mhz as median_other,
        sm_clock_trails as trails
    from buckets
    where sm_clock_mhz is not null

),

marked as (

    select
        flags.*,
        lag(trails) over (
            partition by run_id, gpu_uuid, metric, day_epoch order by t_from
        ) as prev_trails,
        lag(t_to) over (
            partition by run_id, gpu_uuid, metric, day_epoch order by t_from
        ) as prev_t_to,
        row_number() over (
            partition by run_id, gpu_uuid, metric, day_epoch order by t_from
        ) as bucket_of_day,
        count(*) over (partition by run_id, gpu_uuid, metric, day_epoch) as buckets_of_day
    from flags

),

numbered as (

    select
        marked.*,
        sum(
            case
                when trails and (not coalesce(prev_trails, false) or t_from > prev_t_to) then 1
                else 0
            end
        ) over (
            partition by run_id, gpu_uuid, metric, day_epoch
            order by t_from
            rows between unbounded preceding and current row
        ) as piece
    from marked

),

final as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        metric,
        min(t_from) as started_epoch,
        max(t_to) as ended_epoch,
        count(*) as buckets,
        sum(value) as value_sum,
        count(value) as values_counted,
        sum(median_other) as median_other_sum,
        count(median_other) as median_others_counted,
        min(bucket_of_day) = 1 as starts_the_day,
        max(bucket_of_day) = max(buckets_of_day) as ends_the_day,
        day_epoch
    from numbered
    where trails
    group by run_id, gpu_uuid, host, gpu_index, metric, day_epoch, piece

)

select * from final
