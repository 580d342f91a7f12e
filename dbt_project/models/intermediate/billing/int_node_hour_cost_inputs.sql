-- The bill lines int_node_hour_costs was last built from (macros/chooser_inputs.sql,
-- `node_cost_inputs`). Built after it, so that the next run compares its own with these: it
-- then recomputes the node-hour costs from the first day of a line that changed.
-- Stored by the day of each span's start in the build warehouse (macros/incremental.sql,
-- `incremental_published_by_day`) from the node-hour costs' first day
-- (int_node_hour_costs_recompute_from): no line starting before that day differs from this
-- copy's, so a daily run rewrites the rows of its day (a restated month: the month's), not
-- every bill line of the history.
-- depends_on: {{ ref('int_node_hour_costs') }}
-- (the first hour: {{ ref('int_node_hour_costs_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_node_hour_costs_recompute_from') }}
with

inputs as (

    {{ node_cost_inputs() }}

),

final as (

    select * from inputs
    where day_epoch >= {{ first_recomputed_hour('int_node_hour_costs_recompute_from') }}

)

select * from final
