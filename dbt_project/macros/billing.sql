{#- Bill lines' reporting-currency effective cost per accounted UTC day and provider, each line
    prorated by its overlap with the day (hourly, daily and monthly lines alike). Used by the
    singular tests that reconcile marts to fct_billing; `where` filters the lines. -#}
{% macro bill_cost_by_day(where='true') %}

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
    inner join (select distinct day_epoch from {{ ref('int_hours') }}) as days
        on {{ to_epoch('billing."ChargePeriodStart"') }} < days.day_epoch + 86400
        and {{ to_epoch('billing."ChargePeriodEnd"') }} > days.day_epoch
    where {{ where }}
    group by days.day_epoch, billing.x_provider

{% endmacro %}
