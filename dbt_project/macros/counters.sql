{#- How much a counter rose since the previous sample of its series (portable SQL).
    `first`: the value at a series' first sample. After a drop, a counter that restarts from 0
    (`restarts=true`: volatile ECC counters, energy since boot) rose by its new value; a
    persistent one (remapped rows: a drop is a replaced board or a blank) rose by nothing. -#}
{% macro counter_increase(value, previous, restarts=true, first='0') -%}
case
            when {{ value }} is null then null
            when {{ previous }} is null then {{ first }}
            when {{ value }} >= {{ previous }} then {{ value }} - {{ previous }}
            else {{ value if restarts else '0' }}
        end
{%- endmacro %}
