-- Every bill line from every billing source, in one FOCUS-shaped table.
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
{%- set from_hour = first_recomputed_hour('int_billing_lines_recompute_from') %}
with

aws as (

    select * from {{ ref('int_billing__aws') }}
    where billing_period_epoch >= {{ from_hour }}

),

gcp as (

    select * from {{ ref('int_billing__gcp') }}
    where billing_period_epoch >= {{ from_hour }}

),

focus as (

    select * from {{ ref('int_billing__focus') }}
    where billing_period_epoch >= {{ from_hour }}

),

rate_card as (

    select * from {{ ref('int_billing__rate_card') }}
    where billing_period_epoch >= {{ from_hour }}

),

unioned as (

    select *, cast(null as double) as x_energy_kwh, cast(null as double) as x_energy_cost
    from aws
    union all
    select *, cast(null as double) as x_energy_kwh, cast(null as double) as x_energy_cost
    from gcp
    union all
    select *, cast(null as double) as x_energy_kwh, cast(null as double) as x_energy_cost
    from focus
    union all
    select * from rate_card

),

rates as (

    select * from {{ ref('stg_config__currency_rates') }}

),

inventory as (

    select * from {{ ref('stg_config__inventory') }}

),

-- AWS split cost allocation rows (pods/tasks): matched to the node of their parent instance
aws_split as (

    select * from {{ ref('int_billing__aws_split') }}

),

final as (

    select
        unioned.*,
        unioned.billed_cost * rates.rate as x_billed_cost_reporting,
        unioned.effective_cost * rates.rate as x_effective_cost_reporting,
        unioned.list_cost * rates.rate as x_list_cost_reporting,
        inventory.host as x_host,
        aws_split.split_parent_resource_id as x_split_parent_resource_id,
        aws_split.split_cost as x_split_cost,
        aws_split.split_cost * rates.rate as x_split_cost_reporting
    from unioned
    left join rates
        on rates.currency = unioned.billing_currency
    left join aws_split
        on aws_split.x_line_key = unioned.x_line_key
    left join inventory
        -- a node's billed resource is its resource_id, else its host name (an on-prem node's
        -- rate-card lines name the host)
        on coalesce(inventory.resource_id, inventory.host)
            = coalesce(aws_split.split_parent_resource_id, unioned.resource_id)

)

select * from final
