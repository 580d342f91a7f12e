-- Every piece of spend of fct_daily_spend before it is summed per day, team, provider and
-- service (docs/metrics.md), in the reporting currency; `allocation` says which rule made it:
--   gpu_node: a GPU-node line's share of the day (int_billing_line_days) x its team's share of
--     the node-day (int_node_day_team_shares; team null: the node-day's unallocated + down
--     cost; a node-day with nothing to split on stays unallocated);
--   other: a line matching no node, whole, to its team (int_billing_line_teams);
--   shared_idle: the day's and provider's unallocated GPU-node cost shared to the teams in
--     proportion to their direct GPU-node cost (as fct_run_costs does), to `unshared` when no
--     team has any that day and provider; `shared_idle_cost` only, so that per day and provider
--     sum(gpu_node_cost of teams) + sum(shared_idle_cost) = the GPU-node bill.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on (a day's pieces depend on that day's
-- lines and runs only).
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

line_days as (

    select * from {{ ref('int_billing_line_days') }}
    where day_epoch >= {{ from_hour }}

),

node_shares as (

    select * from {{ ref('int_node_day_team_shares') }}
    where day_epoch >= {{ from_hour }}

),

line_teams as (

    select * from {{ ref('int_billing_line_teams') }}

),

node_spend as (

    select
        'gpu_node' as allocation,
        line_days.day_epoch,
        line_days.x_line_key,
        node_shares.team,
        line_days.provider,
        line_days.service,
        line_days.cost * line_days.fraction * coalesce(node_shares.share, 1.0) as cost,
        line_days.billed_cost * line_days.fraction * coalesce(node_shares.share, 1.0)
            as billed_cost,
        line_days.cost * line_days.fraction * coalesce(node_shares.share, 1.0) as gpu_node_cost,
        0.0 as shared_idle_cost
    from line_days
    left join node_shares
        on node_shares.day_epoch = line_days.day_epoch and node_shares.host = line_days.host
    where line_days.host is not null

),

other_spend as (

    select
        'other' as allocation,
        line_days.day_epoch,
        line_days.x_line_key,
        line_teams.team,
        line_days.provider,
        line_days.service,
        line_days.cost * line_days.fraction as cost,
        line_days.billed_cost * line_days.fraction as billed_cost,
        0.0 as gpu_node_cost,
        0.0 as shared_idle_cost
    from line_days
    inner join line_teams
        on line_teams.x_line_key = line_days.x_line_key
    where line_days.host is null

),

-- each team's share of the direct run cost on a day and provider
provider_team_shares as (

    select
        day_epoch,
        provider,
        team,
        sum(gpu_node_cost) / sum(sum(gpu_node_cost)) over (partition by day_epoch, provider)
            as share
    from node_spend
    where team is not null
    group by day_epoch, provider, team
    having sum(gpu_node_cost) <> 0

),

idle_spend as (

    select day_epoch, provider, service, sum(cost) as cost
    from node_spend
    where team is null
    group by day_epoch, provider, service

),

shared_idle as (

    -- idle cost shared to the teams by direct cost; `unshared` when no run cost that day
    select
        'shared_idle' as allocation,
        idle_spend.day_epoch,
        cast(null as string) as x_line_key,
        coalesce(provider_team_shares.team, 'unshared') as team,
        idle_spend.provider,
        idle_spend.service,
        0.0 as cost,
        0.0 as billed_cost,
        0.0 as gpu_node_cost,
        idle_spend.cost * coalesce(provider_team_shares.share, 1.0) as shared_idle_cost
    from idle_spend
    left join provider_team_shares
        on provider_team_shares.day_epoch = idle_spend.day_epoch
        and provider_team_shares.provider = idle_spend.provider

),

final as (

    select * from node_spend
    union all
    select * from other_spend
    union all
    select * from shared_idle

)

select * from final
