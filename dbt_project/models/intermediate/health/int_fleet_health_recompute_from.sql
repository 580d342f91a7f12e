-- The first hour fct_fleet_health_daily recomputes in this run (one row; macros/incremental.sql):
-- the earlier of int_gpu_hour_states' (int_gpu_hour_states_recompute_from: the node-days'
-- downtime sums the GPU-hour states, int_health_node_days) and the day before the run's range
-- (the health signals, int_health_node_day_signals, rewrite it: its last samples cover into
-- the range), or the first day before that whose XIDs, stragglers or scheduler outages differ
-- from those the last build read (int_fleet_health_inputs: a straggler episode the next day's
-- pieces made long enough, an outage an export reported or closed days late, XIDs of a day
-- landed again); null for every hour. `reason` says which. Built before the mart and its
-- tests, which read it. A full build compares nothing (the last build's copy may have other
-- columns).
-- depends_on: {{ ref('int_health_xids') }}
-- depends_on: {{ ref('int_health_node_day_stragglers') }}
-- depends_on: {{ ref('int_health_node_day_outages') }}
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_fleet_health_inputs') if execute else none %}
with

states_from as (

    select from_hour, reason from {{ ref('int_gpu_hour_states_recompute_from') }}

),

{%- if range_start is not none and built is not none %}

signals_from as (

    select
        case
            when from_hour is null then null
            when from_hour <= {{ range_start - 86400 }} then from_hour
            else {{ range_start - 86400 }}
        end as from_hour,
        case
            when from_hour is null or from_hour <= {{ range_start - 86400 }} then reason
            else 'range'
        end as reason
    from states_from

),

now_inputs as (

    {{ fleet_health_inputs() }}

),

built_inputs as (

    select * from {{ built }}

),

differences as (

    -- the node-days before the first the signals and the downtime recompute
    select min(day_epoch) as first_changed
    from {{ changed_input_rows(
        'now_inputs', 'built_inputs', where='day_epoch < (select from_hour from signals_from)'
    ) }}

),

final as (

    {{ first_change_choice('signals_from', 'health events changed') }}

)

{%- else %}

final as (

    {{ uncompared_choice('states_from') }}

)

{%- endif %}

select * from final
