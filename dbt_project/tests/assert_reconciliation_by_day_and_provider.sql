-- Reconciliation (DESIGN.md): per day and provider, run costs + unallocated and down idle cost
-- equal the GPU-node cost in fct_billing (lines matched to an inventory node, prorated to the
-- accounted days), within $0.01. Allocated-idle cost is inside run cost: not added again.
with

node_bill as (

    {{ bill_cost_by_day(where='not billing.x_unattributed') }}

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
