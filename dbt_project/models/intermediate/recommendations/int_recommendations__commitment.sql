-- commitment (docs/metrics.md, "Recommendations"): per cloud provider with a discount rate
-- (var commitment_discount_rates), the steady baseline of on-demand GPU-hours that a Savings
-- Plan or committed-use discount would have covered. An on-demand GPU-hour is a billed one
-- (cost > 0) at list price (cost >= list cost: no commitment, reservation or capacity block
-- discounted it). Steady GPUs = the lowest accounted day's on-demand GPU-hours / 24 (a day
-- with none counts 0). Savings: steady GPUs x var recommendation_hours_per_month x the mean
-- on-demand cost per GPU-hour x the provider's discount rate, from var commitment_min_days
-- accounted days.
with

states as (

    select * from {{ ref('int_gpu_hour_states') }}

),

days as (

    select * from {{ ref('int_days') }}

),

window_hours as (

    select count(*) as hours from {{ ref('int_hours') }}

),

rates as (

    {%- for provider, rate in var('commitment_discount_rates').items() %}
    select '{{ provider }}' as provider, {{ rate }} as discount_rate
    {{ 'union all' if not loop.last }}
    {%- endfor %}

),

on_demand as (

    select *
    from states
    where cost > 0 and cost >= list_cost - 0.000001
        and provider in (select provider from rates)

),

provider_days as (

    select
        rates.provider,
        days.day_epoch,
        count(on_demand.hour_epoch) as gpu_hours
    from rates
    cross join days
    left join on_demand
        on on_demand.provider = rates.provider and on_demand.day_epoch = days.day_epoch
    group by 1, 2

),

baseline as (

    select
        provider,
        count(*) as days_observed,
        min(gpu_hours) as lowest_day_gpu_hours,
        min(gpu_hours) / 24 as steady_gpus
    from provider_days
    group by 1

),

per_provider as (

    select
        provider,
        count(*) as gpu_hours,
        sum(cost) as window_cost,
        sum(cost) / count(*) as cost_per_gpu_hour,
        {{ percentile_cont('mean_utilization', 0.95) }} as p95_utilization,
        {{ percentile_cont('max_memory_used_mib', 0.95) }} / 1024 as p95_memory_gb
    from on_demand
    group by 1

),

final as (

    select
        'commitment' as kind,
        per_provider.provider as subject,
        cast(null as string) as team,
        cast(null as string) as owner,
        baseline.days_observed,
        per_provider.p95_utilization,
        per_provider.p95_memory_gb,
        cast(per_provider.gpu_hours as double) as gpu_hours,
        per_provider.window_cost,
        baseline.lowest_day_gpu_hours * window_hours.hours / 24
            * per_provider.cost_per_gpu_hour * rates.discount_rate as window_savings,
        baseline.lowest_day_gpu_hours * {{ var('recommendation_hours_per_month') }} / 24
            * per_provider.cost_per_gpu_hour * rates.discount_rate as monthly_savings,
        'commit to ' || cast(round(baseline.steady_gpus, 2) as string)
            || ' GPUs at a ' || cast(round(rates.discount_rate * 100, 1) as string)
            || ' % discount' as action,
        'lowest day ' || cast(round(baseline.lowest_day_gpu_hours, 1) as string)
            || ' on-demand GPU-hours of ' || cast(baseline.days_observed as string)
            || ' days; ' || cast(round(per_provider.cost_per_gpu_hour, 4) as string)
            || ' per GPU-hour' as evidence
    from per_provider
    inner join baseline
        on baseline.provider = per_provider.provider
    inner join rates
        on rates.provider = per_provider.provider
    cross join window_hours
    where baseline.days_observed >= {{ var('commitment_min_days') }}
        and baseline.steady_gpus > 0

)

select * from final
