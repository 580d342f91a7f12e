-- Sample intervals cut at hour boundaries, each classified busy or idle by the site's threshold.
-- Stored by day: a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day() }}
with

intervals as (

    select * from {{ ref('int_sample_intervals') }}
    where {{ in_recomputed_days('day_epoch') }}

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

settings as (

    select * from {{ ref('stg_config__settings') }}

),

window_bounds as (

    select min(hour_epoch) as t_start from {{ ref('int_hours') }}

),

node_means as (

    -- the signal of runs mapped `estimated`: the mean utilisation, at each scrape, of the node's
    -- GPUs that better evidence leaves free (no job or pod label on the sample)
    select
        samples.host,
        samples.t,
        avg(samples.utilization) as node_mean_utilization
    from {{ ref('int_gpu_samples') }} as samples
    where samples.mig_instance = '' and not samples.is_labelled
        and samples.t >= (select min(t) from intervals)
    group by samples.host, samples.t

),

clipped as (

    -- spread from the start of the accounted window (a sample before it covers into it)
    select
        intervals.*,
        greatest(intervals.valid_from, window_bounds.t_start) as spread_from
    from intervals
    cross join window_bounds
    where intervals.valid_to > window_bounds.t_start

),

spread as (

    select
        clipped.*,
        {{ spread_period_start('clipped.spread_from') }} as hour_epoch
    from clipped
    inner join offsets
        on {{ spread_join('clipped.spread_from', 'clipped.valid_to') }}

),

final as (

    select
        spread.gpu_uuid,
        spread.mig_instance,
        spread.host,
        spread.day_epoch,
        spread.hour_epoch,
        greatest(spread.spread_from, spread.hour_epoch) as piece_start,
        least(spread.valid_to, spread.hour_epoch + 3600) as piece_end,
        least(spread.valid_to, spread.hour_epoch + 3600)
            - greatest(spread.spread_from, spread.hour_epoch) as seconds,
        spread.utilization,
        spread.power_w,
        spread.fb_used_mib,
        spread.is_fatal_xid,
        -- a held sample without a utilisation value counts busy, like an unobserved second
        not spread.is_fatal_xid
            and coalesce(spread.utilization >= settings.idle_threshold, true)
            as is_busy,
        not spread.is_fatal_xid
            and coalesce(
                coalesce(node_means.node_mean_utilization, spread.utilization)
                >= settings.idle_threshold,
                true
            ) as is_node_busy
    from spread
    left join node_means
        on node_means.host = spread.host and node_means.t = spread.t
    left join gpus
        on gpus.gpu_uuid = spread.gpu_uuid
    left join settings
        on settings.site = gpus.site

)

select * from final
