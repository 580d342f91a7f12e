-- What each power reading covers: [t, min(next reading's t, t + staleness)), whatever the
-- meter's cadence (1 min, 15 min, hourly). Staleness: `meter_stale_after_seconds` from the
-- config, else 2 x the meter's median interval. `counts_for_site`: the reading is part of its
-- site's total of its kind (docs/metrics.md, "PUE"):
--   it: the site's `it_meters` when the config names them; else the meters that are no other
--       meter's child (`meter_parents`); else, without a hierarchy, the site-level meters, the
--       node meters (named after an inventory host) only when the site has no other;
--   facility: every facility meter that is no other meter's child.
with

readings as (

    select
        site,
        meter,
        meter_kind,
        kw,
        {{ to_epoch('read_at') }} as t
    from {{ ref('stg_power__readings') }}

),

settings as (

    select max(meter_stale_after_seconds) as stale_after from {{ ref('stg_config__settings') }}

),

meters as (

    select * from {{ ref('stg_config__meters') }}

),

hosts as (

    select host from {{ ref('stg_config__inventory') }}

),

ordered as (

    select
        readings.*,
        lead(t) over (partition by site, meter order by t) as next_t
    from readings

),

cadence as (

    select
        site,
        meter,
        {{ median_of('next_t - t') }} as median_interval_seconds
    from ordered
    where next_t > t
    group by site, meter

),

site_meters as (

    select
        site,
        meter,
        meter_kind,
        max(case when meter in (select host from hosts) then 1 else 0 end) as is_node_meter
    from readings
    group by site, meter, meter_kind

),

site_rules as (

    select
        site_meters.site,
        max(case when meters.is_it_total then 1 else 0 end) as has_it_totals,
        max(case when site_meters.meter_kind = 'it' and site_meters.is_node_meter = 0 then 1 else 0 end)
            as has_site_it_meters
    from site_meters
    left join meters
        on meters.site = site_meters.site
    group by site_meters.site

),

classified as (

    select
        site_meters.site,
        site_meters.meter,
        site_meters.meter_kind,
        site_meters.is_node_meter,
        case
            when site_meters.meter_kind = 'facility'
                then child.meter is null
            when site_rules.has_it_totals = 1
                then total.meter is not null
            when exists (select 1 from meters where meters.site = site_meters.site and meters.parent_meter is not null)
                then child.meter is null
            when site_rules.has_site_it_meters = 1
                then site_meters.is_node_meter = 0
            else true
        end as counts_for_site
    from site_meters
    inner join site_rules
        on site_rules.site = site_meters.site
    left join meters as total
        on total.site = site_meters.site and total.meter = site_meters.meter and total.is_it_total
    left join meters as child
        on child.site = site_meters.site and child.meter = site_meters.meter
        and child.parent_meter is not null

),

final as (

    select
        ordered.site,
        ordered.meter,
        ordered.meter_kind,
        ordered.kw,
        ordered.t as valid_from,
        least(
            coalesce(ordered.next_t, ordered.t + coalesce(settings.stale_after, 2 * cadence.median_interval_seconds, 0)),
            ordered.t + coalesce(settings.stale_after, 2 * cadence.median_interval_seconds, 0)
        ) as valid_to,
        cadence.median_interval_seconds,
        classified.is_node_meter = 1 as is_node_meter,
        classified.counts_for_site
    from ordered
    cross join settings
    left join cadence
        on cadence.site = ordered.site and cadence.meter = ordered.meter
    inner join classified
        on classified.site = ordered.site
        and classified.meter = ordered.meter
        and classified.meter_kind = ordered.meter_kind

)

select * from final where valid_to > valid_from
