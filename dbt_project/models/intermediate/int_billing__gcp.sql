-- GCP billing export rows in FOCUS shape: net cost = cost + credits.
with

lines as (

    select * from {{ ref('stg_gcp_billing__lines') }}

),

final as (

    select
        'gcp:' || x_source || ':' || x_source_file || ':' || cast(x_line_number as varchar)
            as x_line_key,
        'gcp' as x_provider,
        x_source,
        x_source_file,
        cost + coalesce(credits_amount, 0) as billed_cost,
        cost + coalesce(credits_amount, 0) as effective_cost,
        coalesce(cost_at_list, cost) as list_cost,
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
        case cost_type when 'tax' then 'Tax' when 'adjustment' then 'Adjustment' else 'Usage' end
            as charge_category,
        cost_type as x_line_item_type,
        coalesce(resource_global_name, resource_name) as resource_id,
        sku_id,
        pricing_quantity,
        pricing_unit,
        region as region_id,
        project_id as sub_account_id,
        labels as tags,
        currency as billing_currency
    from lines

)

select * from final
