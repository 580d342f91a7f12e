-- Sample intervals cut at hour boundaries, each classified busy or idle by the site's threshold.
with

intervals as (

    select * from {{ ref('int_sample_intervals') }}

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

node_means as (

    -- the node's mean utilisation at each scrape: the signal of runs mapped `estimated`
    select
        host,
        t,
        avg(utilization) as node_mean_utilization
    from {{ ref('int_gpu_samples') }}
    where mig_instance = ''
    group by host, t

),

spread as (

    select
        intervals.*,
        floor(intervals.valid_from / 3600) * 3600 + offsets.n * 3600 as hour_epoch
    from intervals
    inner join offsets
        on offsets.n <= floor((intervals.valid_to - 0.000001) / 3600) - floor(intervals.valid_from / 3600)

),

final as (

    select
        spread.gpu_uuid,
        spread.mig_instance,
        spread.host,
        spread.hour_epoch,
        greatest(spread.valid_from, spread.hour_epoch) as piece_start,
        least(spread.valid_to, spread.hour_epoch + 3600) as piece_end,
        least(spread.valid_to, spread.hour_epoch + 3600)
            - greatest(spread.valid_from, spread.hour_epoch) as seconds,
        spread.utilization,
        spread.power_w,
        spread.fb_used_mib,
        spread.is_fatal_xid,
        -- a held sample without a utilisation value counts busy, like an unobserved second
        not spread.is_fatal_xid
            and coalesce(spread.utilization >= coalesce(settings.idle_threshold, 0.05), true)
            as is_busy,
        not spread.is_fatal_xid
            and coalesce(node_means.node_mean_utilization, spread.utilization)
            >= coalesce(settings.idle_threshold, 0.05) as is_node_busy
    from spread
    left join node_means
        on node_means.host = spread.host and node_means.t = spread.valid_from
    left join gpus
        on gpus.gpu_uuid = spread.gpu_uuid
    left join settings
        on settings.site = gpus.site

)

select * from final
