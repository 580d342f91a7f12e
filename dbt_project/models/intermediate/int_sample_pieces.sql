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
        not spread.is_fatal_xid
            and spread.utilization >= coalesce(settings.idle_threshold, 0.05) as is_busy
    from spread
    left join gpus
        on gpus.gpu_uuid = spread.gpu_uuid
    left join settings
        on settings.site = gpus.site

)

select * from final
