-- Each sample covers [t, min(next sample's t, t + stale_after)) (stale_after per series:
-- int_gpu_series_cadence); after a fatal XID the GPU is
-- down until its next sample, however long that takes. Clipped to the end of the window.
-- Per GPU unit: a whole GPU, or one MIG instance (int_gpu_units).
with

samples as (

    select * from {{ ref('int_gpu_samples') }}

),

cadence as (

    select * from {{ ref('int_gpu_series_cadence') }}

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
                ordered.t + cadence.stale_after_seconds,
                window_end.t_end
            )
        end as valid_to,
        ordered.utilization,
        ordered.power_w,
        ordered.fb_used_mib,
        ordered.is_fatal_xid
    from ordered
    inner join cadence
        on cadence.gpu_uuid = ordered.gpu_uuid and cadence.mig_instance = ordered.mig_instance
    cross join window_end

)

select * from final where valid_to > valid_from
