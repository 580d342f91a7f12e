-- Spend per UTC day, provider and FOCUS SubAccountId (the AWS usage account, GCP project,
-- Azure subscription, OCI compartment; a rate card's site), in the reporting currency: every
-- fct_billing line prorated to the accounted days exactly as fct_daily_spend does
-- (int_billing_line_days), so per day the sub-accounts sum to fct_daily_spend's total. The
-- forecasts (`spend` series, scope `sub_account:<id>`) and sub-account budgets read it.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on.
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

line_days as (

    select * from {{ ref('int_billing_line_days') }}
    where day_epoch >= {{ from_hour }}

),

lines as (

    select x_line_key, sub_account_id from {{ ref('int_billing_lines') }}

),

settings as (

    select max(reporting_currency) as currency from {{ ref('stg_config__settings') }}

),

final as (

    select
        cast({{ from_epoch('line_days.day_epoch') }} as date) as day,
        line_days.provider,
        lines.sub_account_id as sub_account,
        sum(line_days.cost * line_days.fraction) as cost,
        sum(line_days.billed_cost * line_days.fraction) as billed_cost,
        max(settings.currency) as currency,
        line_days.day_epoch
    from line_days
    inner join lines
        on lines.x_line_key = line_days.x_line_key
    cross join settings
    group by line_days.day_epoch, line_days.provider, lines.sub_account_id

)

select * from final
