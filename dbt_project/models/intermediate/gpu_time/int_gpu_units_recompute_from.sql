-- The first hour int_gpu_units recomputes in this run (one row; macros/incremental.sql): the
-- first day of the run's range; null (every hour) on a full build, when no earlier build left
-- the GPUs it was built with, or when they differ from this run's (int_gpu_unit_inputs: slots,
-- tenures, first reports: a new or replaced board, a slot's first report reach back before the
-- range). `reason` says which. Built before int_gpu_units and its tests, which read it.
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_gpu_unit_inputs') if execute else none %}
with

now_inputs as (

    {{ gpu_unit_inputs() }}

),

{%- if range_start is not none and built is not none %}

built_inputs as (

    select * from {{ built }}

),

differences as (

    select count(*) as changed
    from {{ changed_input_rows('now_inputs', 'built_inputs') }}

),

final as (

    select
        cast(case when changed = 0 then {{ range_start }} end as bigint) as from_hour,
        case when changed = 0 then 'range' else 'gpus changed' end as reason
    from differences

)

{%- else %}

final as (

    {{ no_comparison_choice(range_start) }}

)

{%- endif %}

select * from final
