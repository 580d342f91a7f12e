-- Facility and IT energy per site and UTC day. Each meter reading covers the time until the
-- meter's next reading, bounded by its staleness, split at midnight (int_power_reading_intervals,
-- which also says which meters make the site's total: a child meter is never added to its
-- parent). IT energy comes from IT meters when a site has them, else it is estimated from DCGM
-- GPU energy plus the rate card's host overhead, and flagged. Stored by day like the readings'
-- intervals (a run rewrites the days of its range and the day before it): a rewritten day takes
-- every interval that reaches into it, whatever day it started on.
{{ incremental_by_day(days_before=1) }}
with

intervals as (

    select site, meter, meter_kind, kw, valid_from, valid_to
    from {{ ref('int_power_reading_intervals') }}
    where counts_for_site
        and valid_to > {{ first_recomputed_epoch(days_before=1) }}
        and valid_from < {{ after_recomputed_epoch() }}

),

by_day as (

    -- each reading's coverage split at midnight
    select
        intervals.*,
        {{ spread_period_start('intervals.valid_from', offset='integers.n', period=86400) }} as day_epoch
    from intervals
    inner join {{ ref('int_integers') }} as integers
        on {{ spread_join('intervals.valid_from', 'intervals.valid_to', offset='integers.n', period=86400) }}

),

covered as (

    -- accounted days only
    select
        by_day.*,
        least(by_day.valid_to, by_day.day_epoch + 86400) - greatest(by_day.valid_from, by_day.day_epoch)
            as seconds
    from by_day
    inner join {{ ref('int_days') }} as days
        on days.day_epoch = by_day.day_epoch
    where {{ in_recomputed_days('by_day.day_epoch', days_before=1) }}

),

metered as (

    select
        site,
        day_epoch,
        sum(case when meter_kind = 'facility' then kw * seconds end) / 3600 as facility_kwh,
        sum(case when meter_kind = 'it' then kw * seconds end) / 3600 as it_kwh_metered
    from covered
    group by site, day_epoch

),

estimated as (

    select
        gpus.site,
        floor(telemetry.hour_epoch / 86400) * 86400 as day_epoch,
        sum(telemetry.energy_wh) / 1000 as gpu_kwh
    from {{ ref('int_gpu_hour_telemetry') }} as telemetry
    inner join {{ ref('int_gpus') }} as gpus
        on gpus.gpu_uuid = telemetry.gpu_uuid
    where {{ in_recomputed_days('telemetry.day_epoch', days_before=1) }}
    group by gpus.site, floor(telemetry.hour_epoch / 86400) * 86400

),

overhead as (

    select
        site,
        sum(host_overhead_w) * 24 / 1000 as overhead_kwh_per_day
    from {{ ref('stg_config__rate_cards') }}
    group by site

),

final as (

    select
        metered.site,
        metered.day_epoch,
        metered.facility_kwh,
        coalesce(
            metered.it_kwh_metered,
            estimated.gpu_kwh + coalesce(overhead.overhead_kwh_per_day, 0)
        ) as it_kwh,
        metered.it_kwh_metered is null as it_energy_estimated
    from metered
    left join estimated
        on estimated.site = metered.site and estimated.day_epoch = metered.day_epoch
    left join overhead
        on overhead.site = metered.site

)

select
    *,
    facility_kwh / nullif(it_kwh, 0) as pue
from final
