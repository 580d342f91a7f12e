-- The bill lines the spend models stored by day were last built from (macros/chooser_inputs.sql,
-- `spend_line_inputs`). Built after them, so that the next run compares its own with these:
-- they then recompute from the first day of a line that changed (int_spend_recompute_from).
-- Stored by billing period in the build warehouse (`incremental_published_by_day`) from the
-- period the bill lines recomputed from (int_billing_lines_recompute_from): a line of an
-- earlier period is the row the last build stored, so a daily run rewrites the open month's
-- lines here, not every bill line of the history.
-- depends_on: {{ ref('int_billing_line_days') }}
-- depends_on: {{ ref('int_node_day_team_shares') }}
-- depends_on: {{ ref('int_daily_spend_allocations') }}
-- depends_on: {{ ref('int_spend_breakdown_allocations') }}
-- depends_on: {{ ref('fct_daily_spend') }}
-- depends_on: {{ ref('fct_sub_account_daily_spend') }}
-- depends_on: {{ ref('fct_spend_breakdown') }}
-- depends_on: {{ ref('fct_idle_gpu_hours') }}
-- (the first period: {{ ref('int_billing_lines_recompute_from') }})
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

inputs as (

    {{ spend_line_inputs() }}

),

final as (

    select * from inputs
    where billing_period_epoch >= {{ first_recomputed_hour('int_billing_lines_recompute_from') }}

)

select * from final
