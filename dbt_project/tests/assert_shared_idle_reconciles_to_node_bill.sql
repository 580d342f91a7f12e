-- Per day and provider, the teams' direct GPU-node cost + the idle cost shared to them (the
-- team `unshared` included: idle on a day with no run cost) = the GPU-node bill in
-- fct_billing, within $0.01 (DESIGN.md, "Cost allocation"): idle money never disappears from
-- the team view.
with

node_bill as (

    {{ bill_cost_by_day(where='not billing.x_unattributed') }}

),

team_view as (

    select
        cast({{ to_epoch('day') }} as double) as day_epoch,
        provider,
        sum(case when team is not null then gpu_node_cost else 0 end) + sum(shared_idle_cost)
            as team_cost
    from {{ ref('fct_daily_spend') }}
    group by {{ to_epoch('day') }}, provider

),

compared as (

    select
        node_bill.day_epoch,
        node_bill.provider,
        node_bill.bill_cost,
        coalesce(team_view.team_cost, 0) as team_cost
    from node_bill
    left join team_view
        on team_view.day_epoch = node_bill.day_epoch and team_view.provider = node_bill.provider

)

select * from compared
where abs(bill_cost - team_cost) > 0.01
