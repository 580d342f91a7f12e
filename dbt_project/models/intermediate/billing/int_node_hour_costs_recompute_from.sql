-- The first hour int_node_hour_costs recomputes in this run (one row; macros/incremental.sql):
-- the first day of the run's range (its hours are new), or the first day of a bill line of an
-- inventory node that differs from those the last build spread (int_node_hour_cost_inputs: a
-- CUR redelivery that restates the month, a late line, a removed one); null for every hour on a
-- full build or when no earlier build left the lines. `reason` says which. Built before
-- int_node_hour_costs and its tests, which read it.
-- Only the lines of the billing periods the bill lines recomputed (int_billing_lines, stored by
-- period from int_billing_lines_recompute_from's) are compared: an earlier period's lines are
-- the rows the last build stored and its copy summed, so a daily run compares the open month's
-- (or a period landed again), not every bill line of the history.
-- (the bill lines' first period: {{ ref('int_billing_lines_recompute_from') }})
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_node_hour_cost_inputs') if execute else none %}
{%- set lines_from = recompute_from_hour('int_billing_lines_recompute_from')
    if range_start is not none else none %}
{%- set compared = 'true' if lines_from is none
    else 'coalesce(billing_period_epoch >= ' ~ lines_from ~ ', true)' %}
with

now_inputs as (

    {{ node_cost_inputs() }}

),

{%- if range_start is not none and built is not none %}

built_inputs as (

    select * from {{ built }}

),

differences as (

    select min(cs) as first_changed
    from {{ changed_input_rows('now_inputs', 'built_inputs', where=compared) }}

),

final as (

    select
        cast(case
            when first_changed is null or first_changed >= {{ range_start }} then {{ range_start }}
            else floor(first_changed / 86400) * 86400
        end as bigint) as from_hour,
        case
            when first_changed is null or first_changed >= {{ range_start }} then 'range'
            else 'bill lines changed'
        end as reason
    from differences

)

{%- else %}

final as (

    {{ no_comparison_choice(range_start) }}

)

{%- endif %}

select * from final
