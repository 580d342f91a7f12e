-- IT energy of nodes that have their own meter (a power reading of kind `it` whose `meter` is the
-- node's host name, e.g. a PDU outlet group), per node and accounted hour. Each reading covers
-- the time until the meter's next reading, bounded by its staleness
-- (int_power_reading_intervals), split at hour boundaries.
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
        greatest(intervals.valid_from, window_bounds.t_start) as t,
        least(intervals.valid_to, window_bounds.t_end) as t_end
    from {{ ref('int_power_reading_intervals') }} as intervals
    cross join window_bounds
    where intervals.meter_kind = 'it' and intervals.is_node_meter

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
        sum(kw * (least(t_end, hour_epoch + 3600) - greatest(t, hour_epoch))) / 3600 as it_kwh
    from spread
    group by host, hour_epoch

)

select * from final
