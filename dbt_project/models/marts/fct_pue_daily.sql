-- PUE per site and UTC day: facility energy / IT energy over the same window.
with

pue as (

    select * from {{ ref('int_pue_daily') }}

),

final as (

    select
        site,
        cast({{ from_epoch('day_epoch') }} as date) as day,
        facility_kwh,
        it_kwh,
        pue,
        it_energy_estimated
    from pue

)

select * from final
