-- The GPUs int_gpu_units was last built with: each GPU's slot, tenure and first reported hour
-- (macros/chooser_inputs.sql, `gpu_unit_inputs`). Built after it, so that the next run compares
-- its own with these: a difference means the units of days before that run's range change too
-- (a new or replaced board, a slot's first report), and int_gpu_units recomputes every day.
-- (The GPU-hour states start from the same day, so this is rebuilt after them too.)
-- depends_on: {{ ref('int_gpu_units') }}
-- depends_on: {{ ref('int_gpu_hour_states') }}
-- depends_on: {{ ref('fct_gpu_hours') }}
{{ gpu_unit_inputs() }}
