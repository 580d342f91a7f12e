-- The pieces of spend of fct_spend_breakdown (docs/metrics.md, "Spend breakdown"): the rules
-- of int_daily_spend_allocations, one level finer. A GPU-node line's part of the day
-- (int_billing_line_days) splits by the node-day's direct run cost per team, run kind and user
-- (int_run_gpu_hour_costs with the run's team, kind and user from int_runs), the node-day's
-- unallocated + down cost staying with team, kind and user null; a node-day with nothing to
-- split on stays unallocated. The node's site and instance type come from the inventory.
-- Lines matching no node go whole to their team (int_billing_line_teams), with no site,
-- instance type, kind or user. The day's and provider's idle GPU-node cost is shared to the
-- (team, kind, user) keys in proportion to their direct GPU-node cost, to `unshared` when none
-- has any, as shared_idle_cost only, keeping the idle node's site and instance type. Summed over
-- kind, user, site and instance type every piece equals int_daily_spend_allocations' pieces.
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

line_teams as (

    select * from {{ ref('int_billing_line_teams') }}

),

inventory as (

    select host, site, instance_type from {{ ref('stg_config__inventory') }}

),

run_key_costs as (

    select
        run_hours.day_epoch,
        run_hours.host,
        runs.team,
        runs.kind,
        runs.user_name,
        sum(run_hours.cost) as amount
    from {{ ref('int_run_gpu_hour_costs') }} as run_hours
    inner join {{ ref('int_runs') }} as runs
        on runs.run_id = run_hours.run_id
    where runs.team is not null and run_hours.day_epoch >= {{ from_hour }}
    group by run_hours.day_epoch, run_hours.host, runs.team, runs.kind, runs.user_name

),

unassigned_costs as (

    -- idle (unallocated + down) seconds: nobody held them
    select
        day_epoch,
        host,
        cast(null as string) as team,
        cast(null as string) as kind,
        cast(null as string) as user_name,
        sum((unallocated_seconds + down_seconds) * cost_per_second) as amount
    from {{ ref('int_gpu_hour_states') }}
    where day_epoch >= {{ from_hour }}
    group by day_epoch, host

),

node_amounts as (

    select day_epoch, host, team, kind, user_name, sum(amount) as amount
    from (
        select * from run_key_costs
        union all
        select * from unassigned_costs
    ) as amounts
    group by day_epoch, host, team, kind, user_name

),

node_shares as (

    select
        day_epoch,
        host,
        team,
        kind,
        user_name,
        amount / sum(amount) over (partition by day_epoch, host) as share
    from node_amounts
    where amount <> 0

),

node_spend as (

    select
        'gpu_node' as allocation,
        line_days.day_epoch,
        line_days.x_line_key,
        node_shares.team,
        line_days.provider,
        line_days.service,
        inventory.instance_type,
        inventory.site,
        node_shares.kind,
        node_shares.user_name,
        line_days.cost * line_days.fraction * coalesce(node_shares.share, 1.0) as cost,
        line_days.billed_cost * line_days.fraction * coalesce(node_shares.share, 1.0)
            as billed_cost,
        line_days.cost * line_days.fraction * coalesce(node_shares.share, 1.0) as gpu_node_cost,
        0.0 as shared_idle_cost
    from line_days
    left join node_shares
        on node_shares.day_epoch = line_days.day_epoch and node_shares.host = line_days.host
    left join inventory
        on inventory.host = line_days.host
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
        cast(null as string) as instance_type,
        cast(null as string) as site,
        cast(null as string) as kind,
        cast(null as string) as user_name,
        line_days.cost * line_days.fraction as cost,
        line_days.billed_cost * line_days.fraction as billed_cost,
        0.0 as gpu_node_cost,
        0.0 as shared_idle_cost
    from line_days
    inner join line_teams
        on line_teams.x_line_key = line_days.x_line_key
    where line_days.host is null

),

-- each (team, kind, user) key's share of the direct run cost on a day and provider
provider_key_shares as (

    select
        day_epoch,
        provider,
        team,
        kind,
        user_name,
        sum(gpu_node_cost) / sum(sum(gpu_node_cost)) over (partition by day_epoch, provider)
            as share
    from node_spend
    where team is not null
    group by day_epoch, provider, team, kind, user_name
    having sum(gpu_node_cost) <> 0

),

idle_spend as (

    select day_epoch, provider, service, instance_type, site, sum(cost) as cost
    from node_spend
    where team is null
    group by day_epoch, provider, service, instance_type, site

),

shared_idle as (

    select
        'shared_idle' as allocation,
        idle_spend.day_epoch,
        cast(null as string) as x_line_key,
        coalesce(provider_key_shares.team, 'unshared') as team,
        idle_spend.provider,
        idle_spend.service,
        idle_spend.instance_type,
        idle_spend.site,
        provider_key_shares.kind,
        provider_key_shares.user_name,
        0.0 as cost,
        0.0 as billed_cost,
        0.0 as gpu_node_cost,
        idle_spend.cost * coalesce(provider_key_shares.share, 1.0) as shared_idle_cost
    from idle_spend
    left join provider_key_shares
        on provider_key_shares.day_epoch = idle_spend.day_epoch
        and provider_key_shares.provider = idle_spend.provider

),

final as (

    select * from node_spend
    union all
    select * from other_spend
    union all
    select * from shared_idle

)

select * from final
