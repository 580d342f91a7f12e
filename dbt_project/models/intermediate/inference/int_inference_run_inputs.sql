-- The inference runs the inference run hours were last built from (macros/chooser_inputs.sql,
-- `inference_run_inputs`: each run's team, pod, life and the models it served, a row per run
-- and model). Built after the four models stored from int_inference_recompute_from's first
-- day, so that the next run compares its own with these: they then recompute from the start of
-- a run that changed. A full table: a later pod snapshot can change any run.
-- depends_on: {{ ref('int_inference_run_hours') }}
-- depends_on: {{ ref('int_inference_run_days') }}
-- depends_on: {{ ref('fct_inference_hourly') }}
-- depends_on: {{ ref('fct_inference_daily') }}
{{ inference_run_inputs() }}
