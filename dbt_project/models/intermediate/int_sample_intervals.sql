-- Each sample covers [t, min(next sample's t, t + stale_after)); after a fatal XID the GPU is
-- down until its next sample, however long that takes. Clipped to the end of the window.
-- Per GPU unit: a whole GPU, or one MIG instance (int_gpu_units).
with

samples as (

    select * from {{ ref('int_gpu_samples') }}

),

settings as (

    select max(stale_after_seconds) as stale_after from {{ ref('stg_config__settings') }}

),

window_end as (

    select max(hour_epoch) + 3600 as t_end from {{ ref('int_hours') }}

),

ordered as (

    select
        samples.*,
        lead(samples.t) over (
            partition by samples.gpu_uuid, samples.mig_instance order by samples.t
        ) as next_t
    from samples

),

final as (

    select
        ordered.gpu_uuid,
        ordered.mig_instance,
        ordered.host,
        ordered.gpu_index,
        ordered.t as valid_from,
        case
            when ordered.is_fatal_xid then coalesce(ordered.next_t, window_end.t_end)
            else least(
                coalesce(ordered.next_t, window_end.t_end),
                ordered.t + coalesce(settings.stale_after, 120),
                window_end.t_end
            )
        end as valid_to,
        ordered.utilization,
        ordered.power_w,
        ordered.fb_used_mib,
        ordered.is_fatal_xid
    from ordered
    cross join settings
    cross join window_end

)

select * from final where valid_to > valid_from
