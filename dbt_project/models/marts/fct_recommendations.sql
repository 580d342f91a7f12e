-- One row per recommendation (docs/metrics.md, "Recommendations"): the five rules'
-- int_recommendations__* models, each priced in the reporting currency. The id is a hash of
-- kind and subject, the same from run to run; the owner is the run's user, else its team's
-- owners (config `teams:`); confidence grows with the days observed.
with

rules as (

    {%- for rule in ['release_idle', 'right_size_mig', 'consolidate_replicas', 'commitment',
        'release_capacity'] %}
    select * from {{ ref('int_recommendations__' ~ rule) }}
    {{ 'union all' if not loop.last }}
    {%- endfor %}

),

teams as (

    select team, owners from {{ ref('stg_config__teams') }}

),

currency as (

    select max(reporting_currency) as reporting_currency from {{ ref('stg_config__settings') }}

),

final as (

    select
        {{ dbt.hash("rules.kind || ':' || rules.subject") }} as recommendation_id,
        rules.kind,
        rules.subject,
        rules.team,
        coalesce(rules.owner, teams.owners) as owner,
        rules.action,
        rules.evidence,
        rules.days_observed,
        rules.p95_utilization,
        rules.p95_memory_gb,
        rules.gpu_hours,
        rules.window_cost,
        rules.window_savings,
        rules.monthly_savings,
        coalesce(currency.reporting_currency, 'USD') as currency,
        case
            when rules.days_observed >= {{ var('recommendation_high_confidence_days') }}
                then 'high'
            when rules.days_observed >= {{ var('recommendation_medium_confidence_days') }}
                then 'medium'
            else 'low'
        end as confidence
    from rules
    left join teams
        on teams.team = rules.team
    cross join currency

)

select * from final
