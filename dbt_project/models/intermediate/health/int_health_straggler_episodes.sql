-- Straggler episodes: maximal runs of consecutive trailing buckets of one GPU in one run, per
-- metric (`utilization` | `sm_clock`), kept when they last at least var straggler_min_seconds.
-- An episode ends at a bucket that does not trail, or where the GPU's samples stop (a gap
-- longer than the stale window: not observed is not counted as straggling).
with

buckets as (

    select * from {{ ref('int_health_straggler_buckets') }}

),

flags as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
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
        lag(trails) over (partition by run_id, gpu_uuid, metric order by t_from) as prev_trails,
        lag(t_to) over (partition by run_id, gpu_uuid, metric order by t_from) as prev_t_to
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
            partition by run_id, gpu_uuid, metric
            order by t_from
            rows between unbounded preceding and current row
        ) as episode
    from marked

),

episodes as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        metric,
        episode,
        min(t_from) as started_epoch,
        max(t_to) as ended_epoch,
        count(*) as buckets,
        avg(value) as mean_value,
        avg(median_other) as mean_median_other
    from numbered
    where trails
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
