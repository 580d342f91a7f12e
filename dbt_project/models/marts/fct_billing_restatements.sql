-- What a restated (redelivered) billing period changed: for every delivery of a period that
-- restates an earlier one (int_aws_cur_restatements), the earlier delivery's totals and the new
-- ones, per service and currency, and the change. fct_billing holds only the latest delivery of
-- each period; this is how a number reported last week is explained today.
with

deliveries as (

    select * from {{ ref('stg_aws_cur__deliveries') }}

),

restated as (

    select * from {{ ref('int_aws_cur_restatements') }}

),

sides as (

    -- the totals of each restating delivery (`new`) and of the one before it (`old`)
    select
        restated.x_source,
        restated.billing_period,
        restated.delivery_id,
        deliveries.service_name,
        deliveries.billing_currency,
        case when deliveries.delivery_id = restated.delivery_id then 'new' else 'old' end as side,
        deliveries.line_count,
        deliveries.billed_cost,
        deliveries.effective_cost,
        deliveries.list_cost
    from restated
    inner join deliveries
        on deliveries.x_source = restated.x_source
        and deliveries.billing_period = restated.billing_period
        and deliveries.delivery_id in (restated.delivery_id, restated.previous_delivery_id)

),

compared as (

    -- a service only one side has gets 0 on the other
    select
        x_source,
        billing_period,
        delivery_id,
        service_name,
        billing_currency,
        cast(sum(case when side = 'old' then line_count else 0 end) as bigint) as old_line_count,
        cast(sum(case when side = 'new' then line_count else 0 end) as bigint) as new_line_count,
        sum(case when side = 'old' then billed_cost else 0 end) as old_billed_cost,
        sum(case when side = 'new' then billed_cost else 0 end) as new_billed_cost,
        sum(case when side = 'old' then effective_cost else 0 end) as old_effective_cost,
        sum(case when side = 'new' then effective_cost else 0 end) as new_effective_cost,
        sum(case when side = 'old' then list_cost else 0 end) as old_list_cost,
        sum(case when side = 'new' then list_cost else 0 end) as new_list_cost
    from sides
    group by x_source, billing_period, delivery_id, service_name, billing_currency

),

final as (

    select
        'aws' as provider,
        compared.x_source,
        compared.billing_period,
        compared.delivery_id,
        restated.delivered_at,
        restated.previous_delivery_id,
        restated.previous_delivered_at,
        restated.delivered_after_period_end,
        compared.service_name,
        compared.billing_currency,
        compared.old_line_count,
        compared.new_line_count,
        compared.old_billed_cost,
        compared.new_billed_cost,
        compared.new_billed_cost - compared.old_billed_cost as billed_cost_change,
        compared.old_effective_cost,
        compared.new_effective_cost,
        compared.new_effective_cost - compared.old_effective_cost as effective_cost_change,
        compared.old_list_cost,
        compared.new_list_cost
    from compared
    inner join restated
        on restated.x_source = compared.x_source
        and restated.billing_period = compared.billing_period
        and restated.delivery_id = compared.delivery_id

)

select * from final
