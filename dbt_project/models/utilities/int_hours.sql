-- The hour spine: every hour of every accounted day (int_days). Every inventory GPU has a row
-- for each of them in fct_gpu_hours, whatever telemetry covers.
with

days as (

    select * from {{ ref('int_days') }}

),

hours_of_day as (

    {{ integers(24) }}

),

final as (

    select
        days.day_epoch,
        days.day_epoch + hours_of_day.n * 3600 as hour_epoch
    from days
    cross join hours_of_day

)

select * from final
