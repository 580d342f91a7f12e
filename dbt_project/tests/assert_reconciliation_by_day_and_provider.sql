-- Reconciliation (DESIGN.md): per day and provider, run costs + unallocated and down idle cost
-- equal the GPU-node cost in fct_billing (lines matched to an inventory node, prorated to the
-- accounted days), within $0.01. Allocated-idle cost is inside run cost: not added again.
with

days as (

    select distinct day_epoch from {{ ref('int_hours') }}

),

node_bill as (

    select
        days.day_epoch,
        billing.x_provider as provider,
        sum(
            billing.x_effective_cost_reporting
            * (
                least({{ to_epoch('billing."ChargePeriodEnd"') }}, days.day_epoch + 86400)
                - greatest({{ to_epoch('billing."ChargePeriodStart"') }}, days.day_epoch)
            )
            / nullif(
                {{ to_epoch('billing."ChargePeriodEnd"') }}
                - {{ to_epoch('billing."ChargePeriodStart"') }},
                0
            )
        ) as bill_cost
    from {{ ref('fct_billing') }} as billing
    inner join days
        on {{ to_epoch('billing."ChargePeriodStart"') }} < days.day_epoch + 86400
        and {{ to_epoch('billing."ChargePeriodEnd"') }} > days.day_epoch
    where not billing.x_unattributed
    group by days.day_epoch, billing.x_provider

),

run_cost as (

    select day_epoch, provider, sum(cost) as cost
    from {{ ref('int_run_gpu_hour_costs') }}
    group by day_epoch, provider

),

idle_cost as (

    select
        cast({{ to_epoch('day') }} as double) as day_epoch,
        nodes.provider,
        sum(idle.cost) as cost
    from {{ ref('fct_idle_gpu_hours') }} as idle
    inner join {{ ref('dim_nodes') }} as nodes
        on nodes.host = idle.host
    where idle.cause in ('unallocated', 'down')
    group by {{ to_epoch('day') }}, nodes.provider

),

compared as (

    select
        node_bill.day_epoch,
        node_bill.provider,
        node_bill.bill_cost,
        coalesce(run_cost.cost, 0) + coalesce(idle_cost.cost, 0) as allocated_cost
    from node_bill
    left join run_cost
        on run_cost.day_epoch = node_bill.day_epoch and run_cost.provider = node_bill.provider
    left join idle_cost
        on idle_cost.day_epoch = node_bill.day_epoch and idle_cost.provider = node_bill.provider

)

select * from compared
where abs(bill_cost - allocated_cost) > 0.01
