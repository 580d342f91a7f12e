-- What the GPU-hour states of the last build read from full tables, per hour: each GPU unit's
-- unheld seconds with a failure signal (int_gpu_hour_gaps) and each node's cost
-- (int_node_hour_costs) (macros/incremental.sql, `gpu_hour_state_inputs`). Built after the
-- states, so that the next run compares its own with these: int_gpu_hour_states and
-- fct_gpu_hours then recompute from the first day where they differ.
-- depends_on: {{ ref('int_gpu_hour_states') }}
-- depends_on: {{ ref('fct_gpu_hours') }}
{{ gpu_hour_state_inputs() }}
