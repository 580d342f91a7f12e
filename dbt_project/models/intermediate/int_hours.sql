-- The hours the warehouse accounts for: every hour of every UTC day with landed telemetry.
with

sample_days as (

    select distinct floor(t / 86400) * 86400 as day_epoch
    from {{ ref('int_gpu_samples') }}

),

hours_of_day as (

    {{ integers(24) }}

),

final as (

    select
        sample_days.day_epoch,
        sample_days.day_epoch + hours_of_day.n * 3600 as hour_epoch
    from sample_days
    cross join hours_of_day

)

select * from final
