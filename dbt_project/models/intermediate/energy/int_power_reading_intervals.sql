-- What each power reading covers: [t, min(next reading's t, t + staleness)), whatever the
-- meter's cadence (1 min, 15 min, hourly). Staleness: `meter_stale_after_seconds` from the
-- config, else 2 x the median interval from the meter's readings of that UTC day to the reading
-- after each (so a day's result never changes when later days land, nor when a meter's cadence
-- changes later). `counts_for_site`: the reading is part of its site's total of its kind
-- (docs/metrics.md, "PUE"):
--   it: the site's `it_meters` when the config names them; else the meters that are no other
--       meter's child (`meter_parents`); else, without a hierarchy, the site-level meters, the
--       node meters (named after an inventory host) only when the site has no other reading
--       that day;
--   facility: every facility meter that is no other meter's child.
-- Stored by the reading's day: a day's rows depend on its readings and each meter's first
-- reading after it (a day's last reading is valid until then), so a run rewrites the days of
-- its range and the day before it (macros/incremental.sql).
{{ incremental_by_day(days_before=1) }}
with

readings as (

    select
        site,
        meter,
        meter_kind,
        kw,
        {{ to_epoch('read_at') }} as t,
        floor({{ to_epoch('read_at') }} / 86400) * 86400 as day_epoch
    from {{ ref('stg_power__readings') }}
    where {{ at_recomputed_times('read_at', days_before=1) }}

),

next_after as (

    -- per meter, the first reading after the rewritten days: where the last rewritten one ends
    select site, meter, meter_kind, min({{ to_epoch('read_at') }}) as t
    from {{ ref('stg_power__readings') }}
    {%- if recompute_range() is none %}
    where false
    {%- else %}
    where read_at >= {{ from_epoch(after_recomputed_epoch()) }}
    {%- endif %}
    group by site, meter, meter_kind

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
        coalesce(
            lead(readings.t) over (
                partition by readings.site, readings.meter, readings.meter_kind
                order by readings.t
            ),
            next_after.t
        ) as next_t
    from readings
    left join next_after
        on next_after.site = readings.site
        and next_after.meter = readings.meter
        and next_after.meter_kind = readings.meter_kind

),

cadence as (

    select
        site,
        meter,
        meter_kind,
        day_epoch,
        {{ median_of('next_t - t') }} as median_interval_seconds
    from ordered
    where next_t > t
    group by site, meter, meter_kind, day_epoch

),

site_meters as (

    -- the meters that reported on each day
    select distinct
        readings.site,
        readings.meter,
        readings.meter_kind,
        readings.day_epoch,
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
        day_epoch,
        max(case when meter_kind = 'it' and not is_node_meter then 1 else 0 end)
            as has_site_it_meters
    from site_meters
    group by site, day_epoch

),

classified as (

    select
        site_meters.site,
        site_meters.meter,
        site_meters.meter_kind,
        site_meters.day_epoch,
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
        on site_it.site = site_meters.site and site_it.day_epoch = site_meters.day_epoch
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
    -- interval of the day (a meter with one reading and none after: nothing past itself)
    select
        ordered.*,
        cadence.median_interval_seconds,
        coalesce(settings.stale_after, 2 * cadence.median_interval_seconds, 0) as stale_after
    from ordered
    cross join settings
    left join cadence
        on cadence.site = ordered.site
        and cadence.meter = ordered.meter
        and cadence.meter_kind = ordered.meter_kind
        and cadence.day_epoch = ordered.day_epoch

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
        classified.counts_for_site,
        ordered.day_epoch
    from with_staleness as ordered
    inner join classified
        on classified.site = ordered.site
        and classified.meter = ordered.meter
        and classified.meter_kind = ordered.meter_kind
        and classified.day_epoch = ordered.day_epoch

)

select * from final where valid_to > valid_from
