-- PUE per site and UTC day: facility energy / IT energy over the same window.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- of its range and the day before it, as int_pue_daily does.
{{ incremental_published_by_day(to_last_day=none, days_before=1) }}
with

pue as (

    select * from {{ ref('int_pue_daily') }}
    where {{ in_recomputed_days('day_epoch', days_before=1) }}

),

final as (

    select
        site,
        cast({{ from_epoch('day_epoch') }} as date) as day,
        facility_kwh,
        it_kwh,
        pue,
        it_energy_estimated,
        day_epoch
    from pue

)

select * from final
