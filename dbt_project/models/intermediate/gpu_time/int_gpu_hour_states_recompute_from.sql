-- The first hour int_gpu_hour_states and fct_gpu_hours recompute in this run (one row;
-- macros/incremental.sql): int_gpu_units' (int_gpu_units_recompute_from), or the first day
-- before it whose inputs from full tables differ from those the last build read
-- (int_gpu_hour_state_inputs: each GPU unit's unheld seconds with a failure signal, each node's
-- cost: a restated billing month, a node event reported later); null for every hour. `reason`
-- says which. Built before the two models and their tests, which read it. A full build compares
-- nothing (the last build's copy may have other columns: an upgrade rebuilds in full).
-- A node's cost of an hour before the first the node-hour costs recompute
-- (int_node_hour_costs_recompute_from) is the row the last build stored, which that build's
-- copy holds too: only the hours from that one on are compared, so that a daily run compares a
-- day of node costs rather than every node-hour of the history (the GPUs' gaps come from a full
-- table, int_gpu_hour_gaps, and are compared every hour).
-- (the node-hour costs' first hour: {{ ref('int_node_hour_costs_recompute_from') }})
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_gpu_hour_state_inputs') if execute else none %}
{%- set node_costs_from = recompute_from_hour('int_node_hour_costs_recompute_from')
    if range_start is not none else none %}
{%- set compared = 'hour_epoch < (select from_hour from units_from)' %}
{%- if node_costs_from is not none %}
{%- set compared = compared ~ " and (input = 'gap' or hour_epoch >= " ~ node_costs_from ~ ')' %}
{%- endif %}
with

units_from as (

    select from_hour, reason from {{ ref('int_gpu_units_recompute_from') }}

),

now_inputs as (

    {{ gpu_hour_state_inputs() }}

),

{%- if range_start is not none and built is not none %}

built_inputs as (

    select * from {{ built }}

),

differences as (

    -- the inputs of the hours before the first int_gpu_units recomputes (none when it
    -- recomputes every hour); of the node costs, those the node-hour costs recomputed
    select min(hour_epoch) as first_changed
    from {{ changed_input_rows('now_inputs', 'built_inputs', where=compared) }}

),

final as (

    {{ first_change_choice('units_from', 'costs or failure signals changed') }}

)

{%- else %}

final as (

    {{ uncompared_choice('units_from') }}

)

{%- endif %}

select * from final
