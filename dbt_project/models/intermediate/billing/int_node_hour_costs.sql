-- Cost of each inventory node in each accounted hour: its bill lines' effective cost, each
-- prorated by its overlap with the hour over the line's whole charge period (hourly, daily or
-- monthly lines alike: a $7,200 November line is $10 an hour, whichever days are accounted).
-- A zero-length line (ChargePeriodStart = ChargePeriodEnd: a purchase, a one-time fee) is
-- spread evenly over the node's hours of its UTC day.
-- Stored by day in the build warehouse (macros/incremental.sql, `incremental_published_by_day`):
-- a run rewrites the days from the first of its range, or from the first day of a bill line
-- that changed since the last build (int_node_hour_costs_recompute_from: a restated month
-- recomputes that month's days, not the history).
-- (the first hour: {{ ref('int_node_hour_costs_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_node_hour_costs_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_node_hour_costs_recompute_from') %}
with

lines as (

    select
        x_host as host,
        x_provider as provider,
        x_effective_cost_reporting as effective_cost,
        x_list_cost_reporting as list_cost,
        x_energy_kwh,
        x_energy_cost,
        {{ charge_span_start('charge_period_start', 'charge_period_end') }} as cs,
        {{ charge_span_end('charge_period_start', 'charge_period_end') }} as ce
    from {{ ref('int_billing_lines') }}
    where x_host is not null
        and {{ charge_span_end('charge_period_start', 'charge_period_end') }} > {{ from_hour }}

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

hours as (

    select * from {{ ref('int_hours') }}
    where hour_epoch >= {{ from_hour }}

),

window_bounds as (

    select min(hour_epoch) as t_start, max(hour_epoch) + 3600 as t_end from hours

),

clipped as (

    -- the part of the charge period inside the accounted window
    select
        lines.*,
        greatest(lines.cs, window_bounds.t_start) as span_from,
        least(lines.ce, window_bounds.t_end) as span_to
    from lines
    cross join window_bounds
    where lines.ce > lines.cs

),

spread as (

    select
        clipped.*,
        {{ spread_period_start('clipped.span_from') }} as hour_epoch
    from clipped
    inner join offsets
        on {{ spread_join('clipped.span_from', 'clipped.span_to') }}
    where clipped.span_to > clipped.span_from

),

prorated as (

    select
        spread.host,
        spread.provider,
        spread.hour_epoch,
        (least(spread.span_to, spread.hour_epoch + 3600) - greatest(spread.span_from, spread.hour_epoch))
            / (spread.ce - spread.cs) as fraction,
        spread.effective_cost,
        spread.list_cost,
        spread.x_energy_kwh,
        spread.x_energy_cost
    from spread
    inner join hours
        on hours.hour_epoch = spread.hour_epoch

),

final as (

    select
        host,
        provider,
        hour_epoch,
        sum(effective_cost * fraction) as cost,
        sum(list_cost * fraction) as list_cost,
        sum(x_energy_cost * fraction) as energy_cost,
        sum(x_energy_kwh * fraction) as energy_kwh,
        -- whole seconds on every engine (a Spark partition value, a DuckDB key alike)
        cast(floor(hour_epoch / 86400) * 86400 as bigint) as day_epoch
    from prorated
    group by host, provider, hour_epoch

)

select * from final
