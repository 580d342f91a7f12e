-- What the samples say about each GPU unit-hour: covered and fatal seconds, energy (device
-- level: MIG instances report no power), utilisation. A day's pieces lie within that day
-- (int_sample_pieces cuts them at midnight), so its hours are stored by day and a run
-- recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day() }}
with

pieces as (

    select * from {{ ref('int_sample_pieces') }}
    where {{ in_recomputed_days('day_epoch') }}

),

unit_keys as (

    select * from {{ ref('int_gpu_unit_keys') }}

),

unit_hours as (

    select
        unit_key,
        hour_epoch,
        sum(seconds) as covered_seconds,
        sum(case when is_fatal_xid then seconds else 0 end) as fatal_seconds,
        sum(coalesce(power_w, 0) * seconds) / 3600 as energy_wh,
        sum(case when not is_fatal_xid then utilization * seconds end)
            / nullif(sum(case when not is_fatal_xid then seconds end), 0) as mean_utilization,
        max(fb_used_mib) as max_memory_used_mib,
        day_epoch
    from pieces
    group by unit_key, hour_epoch, day_epoch

),

final as (

    -- the unit's UUID and MIG instance, by its key
    select
        unit_keys.gpu_uuid,
        unit_keys.mig_instance,
        unit_hours.hour_epoch,
        unit_hours.covered_seconds,
        unit_hours.fatal_seconds,
        unit_hours.energy_wh,
        unit_hours.mean_utilization,
        unit_hours.max_memory_used_mib,
        unit_hours.day_epoch
    from unit_hours
    inner join unit_keys
        on unit_keys.unit_key = unit_hours.unit_key

)

select * from final
