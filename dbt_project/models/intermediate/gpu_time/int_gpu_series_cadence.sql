-- How often each DCGM series (GPU unit) was sampled, and how long one sample stays valid:
-- `stale_after_seconds` from the config when set, else 2 x the series' median interval between
-- samples (120 s at 60 s scrapes; DESIGN.md, "From samples to seconds").
with

samples as (

    select gpu_uuid, mig_instance, host, t from {{ ref('int_gpu_samples') }}

),

settings as (

    select max(stale_after_seconds) as stale_after from {{ ref('stg_config__settings') }}

),

intervals as (

    select
        gpu_uuid,
        mig_instance,
        lead(t) over (partition by gpu_uuid, mig_instance order by t) - t as interval_seconds
    from samples

),

medians as (

    select
        gpu_uuid,
        mig_instance,
        {{ median_of('interval_seconds') }} as median_interval_seconds
    from intervals
    where interval_seconds > 0
    group by gpu_uuid, mig_instance

),

series as (

    select distinct gpu_uuid, mig_instance from samples

),

final as (

    select
        series.gpu_uuid,
        series.mig_instance,
        medians.median_interval_seconds,
        -- a series of one sample: its sample covers nothing past itself unless configured
        coalesce(settings.stale_after, 2 * medians.median_interval_seconds, 0)
            as stale_after_seconds
    from series
    cross join settings
    left join medians
        on medians.gpu_uuid = series.gpu_uuid and medians.mig_instance = series.mig_instance

)

select * from final
