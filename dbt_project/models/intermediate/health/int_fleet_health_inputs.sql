-- The XIDs, stragglers and scheduler outages per node and day fct_fleet_health_daily was last
-- built from (macros/chooser_inputs.sql, `fleet_health_inputs`). Built after it, so that the next
-- run compares its own with these: the mart then recomputes from the first day one changed
-- (int_fleet_health_recompute_from). A full table of a few rows per node-day with an event: a
-- later export or a straggler episode's continuation can change an earlier day.
-- depends_on: {{ ref('fct_fleet_health_daily') }}
{{ fleet_health_inputs() }}
