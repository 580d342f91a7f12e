-- How often each DCGM series (GPU unit) was sampled on each day, and how long one of that day's
-- samples stays valid: `stale_after_seconds` from the config when set, else 2 x the median
-- interval between the series' samples of the day (120 s at 60 s scrapes; DESIGN.md, "From
-- samples to seconds"). Per day, so that a day's result never changes when later days land:
-- stored by day, a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day(day_batches=true) }}
with

samples as (

    select gpu_uuid, mig_instance, unit_key, day_epoch, t from {{ ref('int_gpu_samples') }}
    where {{ in_recomputed_days('day_epoch') }}

),

settings as (

    select max(stale_after_seconds) as stale_after from {{ ref('stg_config__settings') }}

),

intervals as (

    select
        unit_key,
        day_epoch,
        lead(t) over (partition by unit_key, day_epoch order by t) - t as interval_seconds
    from samples

),

medians as (

    select
        unit_key,
        day_epoch,
        {{ median_of('interval_seconds') }} as median_interval_seconds
    from intervals
    where interval_seconds > 0
    group by unit_key, day_epoch

),

series_days as (

    select distinct gpu_uuid, mig_instance, unit_key, day_epoch from samples

),

final as (

    select
        series_days.gpu_uuid,
        series_days.mig_instance,
        series_days.unit_key,
        series_days.day_epoch,
        medians.median_interval_seconds,
        -- a day of one sample: its sample covers nothing past itself unless configured
        coalesce(settings.stale_after, 2 * medians.median_interval_seconds, 0)
            as stale_after_seconds
    from series_days
    cross join settings
    left join medians
        on medians.unit_key = series_days.unit_key
        and medians.day_epoch = series_days.day_epoch

)

select * from final
