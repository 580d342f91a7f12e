-- GCP billing export rows in FOCUS shape: net cost = cost + credits. ListCost is the export's
-- cost_at_list; where a row has none (older exports), the SKU's Cloud Catalog list price
-- (int_gcp_list_prices, the version valid when the usage started) × the usage in pricing units,
-- in the row's currency (a USD list price × the row's currency_conversion_rate when the catalog
-- was not fetched in that currency); else the cost itself. EffectiveCost amortises
-- resource-based commitment fees onto the usage their CUD credits cover (int_gcp_commitments):
-- net cost + the line's amortised share (a fee row: − what was amortised away, leaving the unused
-- commitment); commitment fee rows are ChargeCategory Purchase.
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

lines as (

    select * from {{ ref('stg_gcp_billing__lines') }}
    where {{ in_recomputed_periods('invoice_month', '%Y%m') }}

),

list_prices as (

    select * from {{ ref('int_gcp_list_prices') }}

),

commitments as (

    select x_line_key, amortised from {{ ref('int_gcp_commitments') }}

),

priced as (

    select
        lines.*,
        coalesce(
            same_currency.unit_price,
            usd.unit_price * coalesce(lines.currency_conversion_rate, 1.0)
        ) as list_unit_price
    from lines
    left join list_prices as same_currency
        on same_currency.sku_id = lines.sku_id
        and same_currency.currency_code = lines.currency
        and (same_currency.valid_from is null or same_currency.valid_from <= lines.usage_start)
        and (same_currency.valid_to is null or lines.usage_start < same_currency.valid_to)
    left join list_prices as usd
        on usd.sku_id = lines.sku_id
        and usd.currency_code = 'USD'
        and (usd.valid_from is null or usd.valid_from <= lines.usage_start)
        and (usd.valid_to is null or lines.usage_start < usd.valid_to)

),

final as (

    select
        'gcp:' || x_source || ':' || x_source_file || ':' || cast(x_line_number as string)
            as x_line_key,
        'gcp' as x_provider,
        x_source,
        x_source_file,
        cost + coalesce(credits_amount, 0) as billed_cost,
        cost + coalesce(credits_amount, 0) + coalesce(commitments.amortised, 0)
            as effective_cost,
        coalesce(cost_at_list, pricing_quantity * list_unit_price, cost) as list_cost,
        cost as contracted_cost,
        usage_start as charge_period_start,
        usage_end as charge_period_end,
        {{ dbt.cast('(substr(invoice_month, 1, 4) || \'-\' || substr(invoice_month, 5, 2) || \'-01\')', api.Column.translate_type('date')) }} as billing_period_start,
        {{ dbt.dateadd('month', 1, dbt.cast('(substr(invoice_month, 1, 4) || \'-\' || substr(invoice_month, 5, 2) || \'-01\')', api.Column.translate_type('date'))) }} as billing_period_end,
        'Google Cloud' as service_provider_name,
        service_description as service_name,
        case
            when service_description = 'Compute Engine' then 'Compute'
            when service_description = 'Cloud Storage' then 'Storage'
            else 'Other'
        end as service_category,
        case
            when cost_type = 'tax' then 'Tax'
            when cost_type = 'adjustment' then 'Adjustment'
            when {{ regex_match('sku_description', "'" ~ var('gcp_commitment_sku_pattern') ~ "'") }}
                then 'Purchase'
            else 'Usage'
        end as charge_category,
        cost_type as x_line_item_type,
        coalesce(resource_global_name, resource_name) as resource_id,
        sku_id,
        pricing_quantity,
        pricing_unit,
        region as region_id,
        project_id as sub_account_id,
        labels as tags,
        currency as billing_currency,
        {{ period_epoch("substr(priced.invoice_month, 1, 4) || '-' || substr(priced.invoice_month, 5, 2)") }}
            as billing_period_epoch
    from priced
    left join commitments
        on commitments.x_line_key = 'gcp:' || priced.x_source || ':' || priced.x_source_file
            || ':' || cast(priced.x_line_number as string)

)

select * from final
