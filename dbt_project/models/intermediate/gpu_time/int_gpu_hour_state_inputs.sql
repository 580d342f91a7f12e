-- What the GPU-hour states and the runs' GPU-hour costs of the last build read from full
-- tables, per hour: each GPU unit's unheld seconds with a failure signal (int_gpu_hour_gaps) and
-- each node's cost and energy (int_node_hour_costs) (macros/chooser_inputs.sql,
-- `gpu_hour_state_inputs`). Built after the models stored from that choice, so that the next run
-- compares its own with these: int_gpu_hour_states, int_run_gpu_hour_costs, fct_gpu_hours and
-- fct_run_gpu_hours then recompute from the first day where they differ.
-- Stored by day in the build warehouse (macros/incremental.sql, `incremental_published_by_day`)
-- from the same first day (int_gpu_hour_states_recompute_from): that day is at or before the
-- first hour whose inputs differ from this copy's, so the copy's rows before it are this run's
-- already, and a daily run rewrites its day (a CUR redelivery that restates the month: the
-- month's days), not every hour of the history.
-- depends_on: {{ ref('int_gpu_hour_states') }}
-- depends_on: {{ ref('fct_gpu_hours') }}
-- depends_on: {{ ref('int_run_gpu_hour_costs') }}
-- depends_on: {{ ref('fct_run_gpu_hours') }}
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_gpu_hour_states_recompute_from') }}
with

inputs as (

    {{ gpu_hour_state_inputs() }}

),

final as (

    select * from inputs
    where hour_epoch >= {{ first_recomputed_hour('int_gpu_hour_states_recompute_from') }}

)

select * from final
