-- The first hour the spend models stored by day (and fct_idle_gpu_hours, whose allocated-idle
-- hours belong to the runs' teams) recompute in this run (one row;
-- macros/incremental.sql): int_gpu_hour_states' (int_gpu_hour_states_recompute_from: the range,
-- or earlier where node costs or failure signals changed: a node-day's bill splits by its runs'
-- costs and its idle cost), or the first day before it of a bill line or a run that differs from
-- those the last build read (int_spend_line_inputs, int_spend_run_inputs: a CUR redelivery
-- restating its month, a late or removed line, a line's new tags, a run's team, kind or user a
-- later sacct changed); null for every hour. `reason` says which. Built before the spend
-- models and their tests, which read it.
-- A full build compares nothing (the last build's copy may have other columns).
-- depends_on: {{ ref('int_run_gpu_hour_costs') }}
-- Of the bill lines, only those of the billing periods the bill lines recomputed are compared
-- (int_billing_lines is stored by period from int_billing_lines_recompute_from's: an earlier
-- period's lines are the rows the last build stored and its copy holds); every run is.
-- (the bill lines' first period: {{ ref('int_billing_lines_recompute_from') }})
{%- set range_start = run_range_start() %}
{%- set built_lines = built_relation('int_spend_line_inputs') if execute else none %}
{%- set built_runs = built_relation('int_spend_run_inputs') if execute else none %}
{%- set lines_from = recompute_from_hour('int_billing_lines_recompute_from')
    if range_start is not none else none %}
{%- set compared = 'true' if lines_from is none
    else 'coalesce(billing_period_epoch >= ' ~ lines_from ~ ', true)' %}
with

states_from as (

    select from_hour, reason from {{ ref('int_gpu_hour_states_recompute_from') }}

),

{%- if range_start is not none and built_lines is not none and built_runs is not none %}

now_lines as (

    {{ spend_line_inputs() }}

),

built_lines as (

    select * from {{ built_lines }}

),

now_runs as (

    {{ spend_run_inputs() }}

),

built_runs as (

    select * from {{ built_runs }}

),

changed_lines as (

    select * from {{ changed_input_rows('now_lines', 'built_lines', where=compared) }}

),

changed_runs as (

    select distinct subject as run_id
    from {{ changed_input_rows('now_runs', 'built_runs') }}

),

first_changes as (

    -- the first day of a changed line's charge span and of a changed run's GPU-hour costs,
    -- each the states' first hour when none changed
    select
        states_from.from_hour as states_hour,
        states_from.reason as states_reason,
        coalesce(
            floor((select min(cs) from changed_lines) / 86400) * 86400,
            states_from.from_hour
        ) as line_day,
        coalesce(
            (
                select min(run_costs.day_epoch)
                from {{ ref('int_run_gpu_hour_costs') }} as run_costs
                inner join changed_runs
                    on changed_runs.run_id = run_costs.run_id
            ),
            states_from.from_hour
        ) as run_day
    from states_from

),

final as (

    select
        cast(case
            when states_hour is null then null
            else least(states_hour, line_day, run_day)
        end as bigint) as from_hour,
        case
            when states_hour is null then states_reason
            when line_day < states_hour and line_day <= run_day then 'bill lines changed'
            when run_day < states_hour then 'runs changed'
            else states_reason
        end as reason
    from first_changes

)

{%- else %}

final as (

    {{ uncompared_choice('states_from') }}

)

{%- endif %}

select * from final
