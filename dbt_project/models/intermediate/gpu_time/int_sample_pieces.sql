-- Sample intervals cut at hour boundaries, each classified busy or idle by the site's threshold.
--
-- The intervals (a CTE here, not a table of their own: every other model reads the pieces):
-- each sample covers [t, min(next sample's t, t + stale_after)) (stale_after per series and
-- day: int_gpu_series_cadence); after a fatal XID the GPU is down until its next sample,
-- however long that takes. Per GPU unit: a whole GPU, or one MIG instance (int_gpu_units).
-- Cut at midnight into one row per accounted day the coverage reaches (int_days): a day's rows
-- depend only on that day's samples and the last sample before it (int_gpu_last_samples). A
-- day's last sample covers at most to midnight in that day's rows, whatever follows: the rest
-- is the next day's (its first rows: the carried-in sample, from midnight). Samples that cover
-- nothing are left out. `t` is the covering sample's time: int_run_gpu_hours classifies the
-- pieces of runs mapped `estimated` by the node's mean utilisation at that scrape.
-- Keyed by the unit's integer key (`unit_key`, macros/adapters.sql), not its UUID and MIG
-- instance: the window over a day's samples sorts and this table stores no text but the host
-- (int_gpu_unit_keys gives a unit's text back).
--
-- Stored by day: a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day(day_batches=true) }}
with

days as (

    select day_epoch from {{ ref('int_days') }}
    where {{ in_recomputed_days('day_epoch') }}

),

recomputed_samples as (

    select unit_key, host, day_epoch, t, utilization, power_w, fb_used_mib, is_fatal_xid
    from {{ ref('int_gpu_samples') }}
    where {{ in_recomputed_days('day_epoch') }}

),

carried_in as (

    -- per series, the last sample of the latest day before the first recomputed one with
    -- samples (int_gpu_last_samples, a row per series and day): what covers into the range
    select unit_key, host, day_epoch, t, utilization, power_w, fb_used_mib, is_fatal_xid
    from (
        {{ newest_before_range(ref('int_gpu_last_samples'), ['unit_key']) }}
    ) as last_samples

),

samples as (

    select * from recomputed_samples
    union all
    select * from carried_in

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

settings as (

    select * from {{ ref('stg_config__settings') }}

),

cadence as (

    -- per unit and day, how long a sample stays valid, and the unit's site's idle threshold
    select
        series_days.unit_key,
        series_days.day_epoch,
        series_days.stale_after_seconds,
        settings.idle_threshold
    from {{ ref('int_gpu_series_cadence') }} as series_days
    left join gpus
        on gpus.gpu_uuid = series_days.gpu_uuid
    left join settings
        on settings.site = gpus.site

),

ordered as (

    select
        samples.*,
        lead(samples.t) over (partition by samples.unit_key order by samples.t) as next_t
    from samples

),

covered as (

    -- what the sample covers before the cut at midnight; a last sample (no next one yet) is
    -- cut at the end of the days it reaches
    select
        ordered.*,
        cadence.idle_threshold,
        case
            when ordered.is_fatal_xid then ordered.next_t
            else least(
                coalesce(ordered.next_t, ordered.t + cadence.stale_after_seconds),
                ordered.t + cadence.stale_after_seconds
            )
        end as covered_to
    from ordered
    inner join cadence
        on cadence.unit_key = ordered.unit_key
        and cadence.day_epoch = ordered.day_epoch

),

within_a_day as (

    -- most samples: coverage that ends by the next midnight
    select covered.*, covered.day_epoch as covered_day
    from covered
    where covered.covered_to <= covered.day_epoch + 86400

),

across_days as (

    -- coverage past midnight (a sample before midnight, a fatal XID until the next sample)
    select covered.*, days.day_epoch as covered_day
    from covered
    inner join days
        on days.day_epoch + 86400 > covered.t
        and (covered.covered_to is null or days.day_epoch < covered.covered_to)
    where covered.covered_to is null or covered.covered_to > covered.day_epoch + 86400

),

cut as (

    select within_a_day.* from within_a_day
    inner join days
        on days.day_epoch = within_a_day.covered_day
    union all
    select * from across_days

),

cut_intervals as (

    select
        unit_key,
        host,
        covered_day as day_epoch,
        t,
        greatest(t, covered_day) as valid_from,
        least(coalesce(covered_to, covered_day + 86400), covered_day + 86400) as valid_to,
        utilization,
        power_w,
        fb_used_mib,
        is_fatal_xid,
        idle_threshold
    from cut

),

intervals as (

    select * from cut_intervals where valid_to > valid_from

),

window_bounds as (

    select min(hour_epoch) as t_start from {{ ref('int_hours') }}

),

clipped as (

    -- spread from the start of the accounted window (a sample before it covers into it)
    select
        intervals.*,
        greatest(intervals.valid_from, window_bounds.t_start) as spread_from
    from intervals
    cross join window_bounds
    where intervals.valid_to > window_bounds.t_start

),

hour_spans as (

    -- the hour offsets 0..k of an interval that reaches k hours past its first, for every k an
    -- interval can have: cut at midnight above, an interval lies within one day (k < 24)
    select * from {{ ref('int_hour_spans') }}

),

spanned as (

    select
        clipped.*,
        {{ spread_periods('clipped.spread_from', 'clipped.valid_to') }} as span
    from clipped

),

spread as (

    -- the hours each interval overlaps (macros/spread.sql), joined on how many it reaches
    -- past its first: an equality join of 20 M intervals with a few hundred rows instead of
    -- a range join with the window's hours (a third of the model's time)
    select
        spanned.*,
        {{ spread_period_start('spanned.spread_from') }} as hour_epoch
    from spanned
    inner join hour_spans as offsets
        on offsets.span = spanned.span

),

final as (

    select
        spread.unit_key,
        spread.host,
        spread.t,
        spread.day_epoch,
        spread.hour_epoch,
        greatest(spread.spread_from, spread.hour_epoch) as piece_start,
        least(spread.valid_to, spread.hour_epoch + 3600) as piece_end,
        least(spread.valid_to, spread.hour_epoch + 3600)
            - greatest(spread.spread_from, spread.hour_epoch) as seconds,
        spread.utilization,
        spread.power_w,
        spread.fb_used_mib,
        spread.is_fatal_xid,
        -- a held sample without a utilisation value counts busy, like an unobserved second
        not spread.is_fatal_xid
            and coalesce(spread.utilization >= spread.idle_threshold, true)
            as is_busy
    from spread

)

select * from final
