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

    select distinct
        readings.site,
        readings.meter,
        readings.meter_kind,
        hosts.host is not null as is_node_meter
    from readings
    left join hosts
        on hosts.host = readings.meter

),

config_rules as (

    -- what the config says of each site's meters
    select
        site,
        max(case when is_it_total then 1 else 0 end) as has_it_totals,
        max(case when parent_meter is not null then 1 else 0 end) as has_hierarchy
    from meters
    group by site

),

site_it as (

    select
        site,
        max(case when meter_kind = 'it' and not is_node_meter then 1 else 0 end)
            as has_site_it_meters
    from site_meters
    group by site

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
            when coalesce(config_rules.has_it_totals, 0) = 1
                then total.meter is not null
            when coalesce(config_rules.has_hierarchy, 0) = 1
                then child.meter is null
            when site_it.has_site_it_meters = 1
                then not site_meters.is_node_meter
            else true
        end as counts_for_site
    from site_meters
    inner join site_it
        on site_it.site = site_meters.site
    left join config_rules
        on config_rules.site = site_meters.site
    left join meters as total
        on total.site = site_meters.site and total.meter = site_meters.meter and total.is_it_total
    left join meters as child
        on child.site = site_meters.site and child.meter = site_meters.meter
        and child.parent_meter is not null

),

with_staleness as (

    -- how long each reading stays valid: the configured staleness, else 2 x the meter's median
    -- interval (a meter with one reading: nothing past itself)
    select
        ordered.*,
        cadence.median_interval_seconds,
        coalesce(settings.stale_after, 2 * cadence.median_interval_seconds, 0) as stale_after
    from ordered
    cross join settings
    left join cadence
        on cadence.site = ordered.site and cadence.meter = ordered.meter

),

final as (

    select
        ordered.site,
        ordered.meter,
        ordered.meter_kind,
        ordered.kw,
        ordered.t as valid_from,
        least(coalesce(ordered.next_t, ordered.t + ordered.stale_after), ordered.t + ordered.stale_after)
            as valid_to,
        ordered.median_interval_seconds,
        classified.is_node_meter,
        classified.counts_for_site
    from with_staleness as ordered
    inner join classified
        on classified.site = ordered.site
        and classified.meter = ordered.meter
        and classified.meter_kind = ordered.meter_kind

)

select * from final where valid_to > valid_from
