-- Every currency a bill is in needs a rate to the reporting currency (config `currency_rates`):
-- lines in a currency without one have null reporting-currency costs. One row per such currency.
{{ config(severity='warn') }}

select
    BillingCurrency as billing_currency,
    count(*) as lines,
    sum(BilledCost) as billed_cost
from {{ ref('fct_billing') }}
where BilledCost is not null and x_billed_cost_reporting is null
group by BillingCurrency
