-- Every bill line from every billing source, in one FOCUS-shaped table.
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
{%- set from_hour = first_recomputed_hour('int_billing_lines_recompute_from') %}
{#- the FOCUS-shape columns of the four models, in order; `billing_period_epoch` goes last, the
    partition column of a Spark table stored by billing period -#}
{%- set line_columns = [
    'x_line_key', 'x_provider', 'x_source', 'x_source_file', 'billed_cost', 'effective_cost',
    'list_cost', 'contracted_cost', 'charge_period_start', 'charge_period_end',
    'billing_period_start', 'billing_period_end', 'service_provider_name', 'service_name',
    'service_category', 'charge_category', 'x_line_item_type', 'resource_id', 'sku_id',
    'pricing_quantity', 'pricing_unit', 'region_id', 'sub_account_id', 'tags', 'billing_currency'
] %}
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

    {%- for billed in ['aws', 'gcp', 'focus'] %}
    select
        {{ line_columns | join(', ') }},
        cast(null as double) as x_energy_kwh,
        cast(null as double) as x_energy_cost,
        billing_period_epoch
    from {{ billed }}
    union all
    {%- endfor %}
    select {{ line_columns | join(', ') }}, x_energy_kwh, x_energy_cost, billing_period_epoch
    from rate_card

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
        {%- for column in line_columns %}
        unioned.{{ column }},
        {%- endfor %}
        unioned.x_energy_kwh,
        unioned.x_energy_cost,
        unioned.billed_cost * rates.rate as x_billed_cost_reporting,
        unioned.effective_cost * rates.rate as x_effective_cost_reporting,
        unioned.list_cost * rates.rate as x_list_cost_reporting,
        inventory.host as x_host,
        aws_split.split_parent_resource_id as x_split_parent_resource_id,
        aws_split.split_cost as x_split_cost,
        aws_split.split_cost * rates.rate as x_split_cost_reporting,
        unioned.billing_period_epoch
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
