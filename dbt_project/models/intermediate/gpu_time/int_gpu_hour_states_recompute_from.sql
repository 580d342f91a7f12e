-- The first hour int_gpu_hour_states and fct_gpu_hours recompute in this run (one row;
-- macros/incremental.sql): int_gpu_units' (int_gpu_units_recompute_from), or the first day
-- before it whose inputs from full tables differ from those the last build read
-- (int_gpu_hour_state_inputs: each GPU unit's unheld seconds with a failure signal, each node's
-- cost: a restated billing month, a node event reported later); null for every hour. `reason`
-- says which. Built before the two models and their tests, which read it. A full build compares
-- nothing (the last build's copy may have other columns: an upgrade rebuilds in full).
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_gpu_hour_state_inputs') if execute else none %}
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
    -- recomputes every hour)
    select min(hour_epoch) as first_changed_hour
    from {{ changed_input_rows(
        'now_inputs', 'built_inputs', where='hour_epoch < (select from_hour from units_from)'
    ) }}

),

final as (

    select
        cast(case
            when differences.first_changed_hour is null then units_from.from_hour
            else floor(differences.first_changed_hour / 86400) * 86400
        end as bigint) as from_hour,
        case
            when differences.first_changed_hour is null then units_from.reason
            else 'costs or failure signals changed'
        end as reason
    from units_from
    cross join differences

)

{%- else %}

final as (

    select
        cast(null as bigint) as from_hour,
        case when from_hour is null then reason else 'no earlier build' end as reason
    from units_from

)

{%- endif %}

select * from final
