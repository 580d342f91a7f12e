-- Spend per UTC day, team, provider and service, in the reporting currency (docs/metrics.md).
-- Every fct_billing line is prorated to the accounted days by its charge period's overlap
-- (as the reconciliation test does), so the mart sums to the bill over those days; a
-- zero-length line (a purchase, a one-time fee) counts on the day of its start.
--   GPU-node lines (matched to an inventory node): split to teams in proportion to the
--     node-day's direct run cost by team, the node-day's unallocated + down cost going to
--     team null (unallocated); `shared_idle_cost` shares that idle cost to the teams in
--     proportion to their direct cost on the day and provider (as fct_run_costs does), to the
--     team `unshared` when no run cost that day and provider, so that per day and provider
--     sum(gpu_node_cost of teams) + sum(shared_idle_cost) = the GPU-node bill;
--   other lines: the team of the first team rule (by priority) whose cloud_tag the line's tags
--     carry or whose cloud_account is the line's SubAccountId, else `unattributed`.
with

days as (

    select day_epoch from {{ ref('int_days') }}

),

billing as (

    select
        x_line_key,
        x_host as host,
        x_provider as provider,
        "ServiceName" as service,
        "Tags" as tags,
        "SubAccountId" as sub_account_id,
        x_effective_cost_reporting as cost,
        x_billed_cost_reporting as billed_cost,
        {{ charge_span_start('"ChargePeriodStart"', '"ChargePeriodEnd"') }} as cs,
        {{ charge_span_end('"ChargePeriodStart"', '"ChargePeriodEnd"') }} as ce
    from {{ ref('fct_billing') }}

),

prorated as (

    select
        days.day_epoch,
        billing.x_line_key,
        billing.host,
        billing.provider,
        billing.service,
        billing.tags,
        (least(billing.ce, days.day_epoch + 86400) - greatest(billing.cs, days.day_epoch))
            / (billing.ce - billing.cs) as fraction,
        billing.cost,
        billing.billed_cost
    from billing
    inner join days
        on billing.cs < days.day_epoch + 86400
        and billing.ce > days.day_epoch
    where billing.ce > billing.cs

),

-- what each team's runs and the idle seconds cost on each node-day
run_team_costs as (

    select
        run_hours.day_epoch,
        run_hours.host,
        runs.team,
        sum(run_hours.cost) as amount
    from {{ ref('int_run_gpu_hour_costs') }} as run_hours
    inner join {{ ref('fct_runs') }} as runs
        on runs.run_id = run_hours.run_id
    where runs.team is not null
    group by run_hours.day_epoch, run_hours.host, runs.team

),

unassigned_costs as (

    -- idle (unallocated + down) seconds: nobody held them
    select
        day_epoch,
        host,
        cast(null as varchar) as team,
        sum((unallocated_seconds + down_seconds) * cost_per_second) as amount
    from {{ ref('int_gpu_hour_states') }}
    group by day_epoch, host

),

node_amounts as (

    select day_epoch, host, team, sum(amount) as amount
    from (
        select * from run_team_costs
        union all
        select * from unassigned_costs
    ) as amounts
    group by day_epoch, host, team

),

node_shares as (

    select
        day_epoch,
        host,
        team,
        amount / sum(amount) over (partition by day_epoch, host) as share
    from node_amounts
    where amount <> 0

),

node_spend as (

    -- a node-day with nothing to split on (no GPU-hours) stays unallocated
    select
        prorated.day_epoch,
        node_shares.team,
        prorated.provider,
        prorated.service,
        prorated.cost * prorated.fraction * coalesce(node_shares.share, 1.0) as cost,
        prorated.billed_cost * prorated.fraction * coalesce(node_shares.share, 1.0)
            as billed_cost,
        prorated.cost * prorated.fraction * coalesce(node_shares.share, 1.0) as gpu_node_cost,
        0.0 as shared_idle_cost
    from prorated
    left join node_shares
        on node_shares.day_epoch = prorated.day_epoch and node_shares.host = prorated.host
    where prorated.host is not null

),

line_rules as (

    select * from {{ ref('stg_config__team_rules') }}
    where rule_type in ('cloud_tag', 'cloud_account')

),

rule_hits as (

    select
        billing.x_line_key,
        line_rules.team,
        line_rules.priority
    from billing
    inner join line_rules
        on (
            line_rules.rule_type = 'cloud_tag'
            and {{ json_text('billing.tags', 'line_rules.rule_key') }} = line_rules.rule_value
        )
        or (
            line_rules.rule_type = 'cloud_account'
            and billing.sub_account_id = line_rules.rule_value
        )
    where billing.host is null

),

tag_matches as (

    select
        x_line_key,
        team,
        row_number() over (partition by x_line_key order by priority, team) as rn
    from rule_hits

),

other_spend as (

    select
        prorated.day_epoch,
        coalesce(tag_matches.team, 'unattributed') as team,
        prorated.provider,
        prorated.service,
        prorated.cost * prorated.fraction as cost,
        prorated.billed_cost * prorated.fraction as billed_cost,
        0.0 as gpu_node_cost,
        0.0 as shared_idle_cost
    from prorated
    left join tag_matches
        on tag_matches.x_line_key = prorated.x_line_key and tag_matches.rn = 1
    where prorated.host is null

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
        idle_spend.day_epoch,
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

unioned as (

    select * from node_spend
    union all
    select * from other_spend
    union all
    select * from shared_idle

),

settings as (

    select max(reporting_currency) as currency from {{ ref('stg_config__settings') }}

),

final as (

    select
        cast({{ from_epoch('unioned.day_epoch') }} as date) as day,
        unioned.team,
        unioned.provider,
        unioned.service,
        sum(unioned.cost) as cost,
        sum(unioned.billed_cost) as billed_cost,
        sum(unioned.gpu_node_cost) as gpu_node_cost,
        sum(unioned.cost) - sum(unioned.gpu_node_cost) as other_cost,
        sum(unioned.shared_idle_cost) as shared_idle_cost,
        max(settings.currency) as currency
    from unioned
    cross join settings
    group by unioned.day_epoch, unioned.team, unioned.provider, unioned.service

)

select * from final
