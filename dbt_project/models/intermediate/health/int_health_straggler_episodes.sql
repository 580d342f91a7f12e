-- Straggler episodes: maximal runs of consecutive trailing buckets of one GPU in one run, per
-- metric (`utilization` | `sm_clock`), kept when they last at least var straggler_min_seconds.
-- An episode ends at a bucket that does not trail, or where the GPU's samples stop (a gap
-- longer than the stale window: not observed is not counted as straggling). Made of the days'
-- pieces (int_health_straggler_pieces, cut at midnight): a piece that starts at its day's first
-- bucket continues the previous piece when that one ran to its day's last bucket and the two
-- touch (an episode across midnight), so this model reads a row per piece, not the buckets.
with

pieces as (

    select * from {{ ref('int_health_straggler_pieces') }}

),

ordered as (

    select
        pieces.*,
        lag(ended_epoch) over (
            partition by run_id, gpu_uuid, metric order by started_epoch
        ) as prev_ended_epoch,
        lag(ends_the_day) over (
            partition by run_id, gpu_uuid, metric order by started_epoch
        ) as prev_ends_the_day
    from pieces

),

numbered as (

    select
        ordered.*,
        sum(
            case
                when starts_the_day and coalesce(prev_ends_the_day, false)
                    and started_epoch <= prev_ended_epoch then 0
                else 1
            end
        ) over (
            partition by run_id, gpu_uuid, metric
            order by started_epoch
            rows between unbounded preceding and current row
        ) as episode
    from ordered

),

episodes as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        metric,
        episode,
        min(started_epoch) as started_epoch,
        max(ended_epoch) as ended_epoch,
        cast(sum(buckets) as bigint) as buckets,
        sum(value_sum) / nullif(sum(values_counted), 0) as mean_value,
        sum(median_other_sum) / nullif(sum(median_others_counted), 0) as mean_median_other
    from numbered
    group by run_id, gpu_uuid, host, gpu_index, metric, episode

),

final as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        metric,
        started_epoch,
        ended_epoch,
        ended_epoch - started_epoch as seconds,
        buckets,
        mean_value,
        mean_median_other
    from episodes
    where ended_epoch - started_epoch >= {{ var('straggler_min_seconds') }}

)

select * from final
