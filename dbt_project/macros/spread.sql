{#- Spreading an interval [from, to) over the hours (or, with period=86400, the days) it
    overlaps, the way every model that cuts time at hour boundaries does it: join the offsets
    0, 1, ... (int_hour_offsets, or int_integers for days) on `spread_join`, and each joined
    row's period starts at `spread_period_start`. The interval is clipped to the accounted window
    first (int_hour_offsets spans the window); the piece of the interval inside a period is then
    [greatest(from, period start), least(to, period start + period)). An interval ending exactly
    on a boundary does not reach into the next period (the 0.000001 s). Portable SQL. -#}

{% macro spread_join(from_col, to_col, offset='offsets.n', period=3600) -%}
    {{ offset }} <= {{ spread_periods(from_col, to_col, period) }}
{%- endmacro %}

{#- how many periods past its first an interval [from, to) reaches: spread_join holds for the
    offsets 0 .. this -#}
{% macro spread_periods(from_col, to_col, period=3600) -%}
    (floor(({{ to_col }} - 0.000001) / {{ period }}) - floor({{ from_col }} / {{ period }}))
{%- endmacro %}

{% macro spread_period_start(from_col, offset='offsets.n', period=3600) -%}
    floor({{ from_col }} / {{ period }}) * {{ period }} + {{ offset }} * {{ period }}
{%- endmacro %}
