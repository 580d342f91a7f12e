-- Spend per UTC day, team, provider and service, in the reporting currency (docs/metrics.md):
-- the pieces of int_daily_spend_allocations summed. Every fct_billing line is prorated to the
-- accounted days by its charge period's overlap (int_billing_line_days), so the mart sums to the
-- bill over those days; GPU-node lines are split to teams by the node-day's direct run cost,
-- the idle part going to team null and `shared_idle_cost` sharing it to the teams
-- (int_node_day_team_shares); other lines go to the team of the first matching cloud_tag /
-- cloud_account rule, else `unattributed` (int_billing_line_teams).
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on.
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

allocations as (

    select * from {{ ref('int_daily_spend_allocations') }}
    where day_epoch >= {{ from_hour }}

),

settings as (

    select max(reporting_currency) as currency from {{ ref('stg_config__settings') }}

),

final as (

    select
        cast({{ from_epoch('allocations.day_epoch') }} as date) as day,
        allocations.team,
        allocations.provider,
        allocations.service,
        sum(allocations.cost) as cost,
        sum(allocations.billed_cost) as billed_cost,
        sum(allocations.gpu_node_cost) as gpu_node_cost,
        sum(allocations.cost) - sum(allocations.gpu_node_cost) as other_cost,
        sum(allocations.shared_idle_cost) as shared_idle_cost,
        max(settings.currency) as currency,
        allocations.day_epoch
    from allocations
    cross join settings
    group by allocations.day_epoch, allocations.team, allocations.provider, allocations.service

)

select * from final
