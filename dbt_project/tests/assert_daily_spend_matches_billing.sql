-- fct_daily_spend sums to fct_billing's reporting-currency effective cost, prorated to the
-- accounted days like assert_reconciliation_by_day_and_provider, per day and provider within
-- $0.01 (every bill line lands in some team, `unattributed` or unallocated, exactly once).
with

bill as (

    {{ bill_cost_by_day() }}

),

spend as (

    select
        cast({{ to_epoch('day') }} as double) as day_epoch,
        provider,
        sum(cost) as spend_cost
    from {{ ref('fct_daily_spend') }}
    group by {{ to_epoch('day') }}, provider

),

compared as (

    select
        coalesce(bill.day_epoch, spend.day_epoch) as day_epoch,
        coalesce(bill.provider, spend.provider) as provider,
        coalesce(bill.bill_cost, 0) as bill_cost,
        coalesce(spend.spend_cost, 0) as spend_cost
    from bill
    full outer join spend
        on spend.day_epoch = bill.day_epoch and spend.provider = bill.provider

)

select * from compared
where abs(bill_cost - spend_cost) > 0.01
