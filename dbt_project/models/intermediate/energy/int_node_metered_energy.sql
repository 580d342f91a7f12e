-- IT energy of nodes that have their own meter (a power reading of kind `it` whose `meter` is the
-- node's host name, e.g. a PDU outlet group), per node and accounted hour. Each reading covers
-- the time until the meter's next reading, bounded by its staleness
-- (int_power_reading_intervals), split at hour boundaries. Stored by day like the readings'
-- intervals (a run rewrites the days of its range and the day before it): a rewritten day's
-- hours take every interval that reaches into them, whatever day it started on.
{{ incremental_by_day(days_before=1) }}
with

window_bounds as (

    select min(hour_epoch) as t_start, max(hour_epoch) + 3600 as t_end
    from {{ ref('int_hours') }}

),

covered as (

    -- the node's own meter: an `it` reading whose meter is the node's host name
    select
        intervals.meter as host,
        intervals.kw,
        greatest(
            intervals.valid_from, window_bounds.t_start, {{ first_recomputed_epoch(days_before=1) }}
        ) as t,
        least(intervals.valid_to, window_bounds.t_end, {{ after_recomputed_epoch() }}) as t_end
    from {{ ref('int_power_reading_intervals') }} as intervals
    cross join window_bounds
    where intervals.meter_kind = 'it' and intervals.is_node_meter
        and intervals.valid_to > {{ first_recomputed_epoch(days_before=1) }}
        and intervals.valid_from < {{ after_recomputed_epoch() }}

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

spread as (

    select
        covered.host,
        covered.kw,
        {{ spread_period_start('covered.t') }} as hour_epoch,
        covered.t,
        covered.t_end
    from covered
    inner join offsets
        on {{ spread_join('covered.t', 'covered.t_end') }}
    where covered.t_end > covered.t

),

final as (

    select
        host,
        hour_epoch,
        sum(kw * (least(t_end, hour_epoch + 3600) - greatest(t, hour_epoch))) / 3600 as it_kwh,
        floor(hour_epoch / 86400) * 86400 as day_epoch
    from spread
    group by host, hour_epoch

)

select * from final
