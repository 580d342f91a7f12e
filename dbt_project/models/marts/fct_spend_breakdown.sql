-- Spend per UTC day, team, provider, service, instance type, site, run kind and user, in the
-- reporting currency (docs/metrics.md, "Spend breakdown"): the cost explorer's mart. The pieces
-- of int_spend_breakdown_allocations summed; summed over instance_type, site, kind and
-- user_name it equals fct_daily_spend (tests/test_spend_breakdown.py).
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on.
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

allocations as (

    select * from {{ ref('int_spend_breakdown_allocations') }}
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
        allocations.instance_type,
        allocations.site,
        allocations.kind,
        allocations.user_name,
        sum(allocations.cost) as cost,
        sum(allocations.billed_cost) as billed_cost,
        sum(allocations.gpu_node_cost) as gpu_node_cost,
        sum(allocations.cost) - sum(allocations.gpu_node_cost) as other_cost,
        sum(allocations.shared_idle_cost) as shared_idle_cost,
        max(settings.currency) as currency,
        allocations.day_epoch
    from allocations
    cross join settings
    group by
        allocations.day_epoch,
        allocations.team,
        allocations.provider,
        allocations.service,
        allocations.instance_type,
        allocations.site,
        allocations.kind,
        allocations.user_name

)

select * from final
