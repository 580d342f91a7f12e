-- The runs the scheduler's allocation per run and day (int_run_allocated_days) and the team
-- days (fct_team_gpu_hours_daily) were last built from (macros/chooser_inputs.sql,
-- `run_allocation_inputs`: each started run's team, GPU equivalents, start and end). Built
-- after them, so that the next run compares its own with these: they then recompute from the
-- first day a run's allocation changed (int_team_days_recompute_from). A full table: a later
-- sacct export can change any run.
-- depends_on: {{ ref('int_run_allocated_days') }}
-- depends_on: {{ ref('fct_team_gpu_hours_daily') }}
{{ run_allocation_inputs() }}
