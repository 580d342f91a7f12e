-- The bill lines int_node_hour_costs was last built from (macros/incremental.sql,
-- `node_cost_inputs`). Built after it, so that the next run compares its own with these: it
-- then recomputes the node-hour costs from the first day of a line that changed.
-- depends_on: {{ ref('int_node_hour_costs') }}
{{ node_cost_inputs() }}
