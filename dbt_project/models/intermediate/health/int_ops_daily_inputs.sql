-- The runs, Kueue workloads and dumps and node outages fct_ops_daily was last built from
-- (macros/chooser_inputs.sql, `ops_daily_inputs`). Built after it, so that the next run compares
-- its own with these: the mart then recomputes from the first day a changed one counts in
-- (int_ops_daily_recompute_from). A full table: a later export can change any of them.
-- depends_on: {{ ref('fct_ops_daily') }}
{{ ops_daily_inputs() }}
