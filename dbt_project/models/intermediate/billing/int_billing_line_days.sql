-- Every bill line prorated to the accounted UTC days (docs/metrics.md, fct_daily_spend): each
-- line's charge span (macro charge_span_start / charge_span_end) by its overlap with each day,
-- hourly, daily and monthly lines alike; a zero-length line (a purchase, a one-time fee) counts
-- on the day of its start. Summed over the accounted days a line's fractions give the part of
-- its bill inside them (the reconciliation tests prorate the same way).
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on (its range, or the first day of a bill
-- line or run that changed), from the lines whose span reaches them.
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

days as (

    select day_epoch from {{ ref('int_days') }}
    where day_epoch >= {{ from_hour }}

),

lines as (

    select * from {{ ref('int_billing_lines') }}

),

renamed as (

    select
        x_line_key,
        x_host as host,
        x_provider as provider,
        service_name as service,
        x_effective_cost_reporting as cost,
        x_billed_cost_reporting as billed_cost,
        {{ charge_span_start('charge_period_start', 'charge_period_end') }} as cs,
        {{ charge_span_end('charge_period_start', 'charge_period_end') }} as ce
    from lines

),

final as (

    select
        days.day_epoch,
        renamed.x_line_key,
        renamed.host,
        renamed.provider,
        renamed.service,
        (least(renamed.ce, days.day_epoch + 86400) - greatest(renamed.cs, days.day_epoch))
            / (renamed.ce - renamed.cs) as fraction,
        renamed.cost,
        renamed.billed_cost
    from renamed
    inner join days
        on renamed.cs < days.day_epoch + 86400
        and renamed.ce > days.day_epoch
    where renamed.ce > renamed.cs and renamed.ce > {{ from_hour }}

)

select * from final
