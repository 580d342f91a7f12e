with

source as (

    select * from {{ landing('gcp_billing_lines') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        billing_account_id,
        service_id,
        service_description,
        sku_id,
        sku_description,
        usage_start_time as usage_start,
        usage_end_time as usage_end,
        project_id,
        project_name,
        labels,
        location_region as region,
        location_zone as zone,
        resource_name,
        resource_global_name,
        cast(cost as double) as cost,
        currency,
        cast(currency_conversion_rate as double) as currency_conversion_rate,
        cast(usage_amount_in_pricing_units as double) as pricing_quantity,
        usage_pricing_unit as pricing_unit,
        cast(credits_amount as double) as credits_amount,
        -- the COMMITTED_USAGE_DISCOUNT credits within credits_amount (null: landed before
        -- ingest split them out; such rows are taken as not covered by a commitment)
        cast(credits_cud_amount as double) as credits_cud_amount,
        invoice_month,
        cost_type,
        cast(cost_at_list as double) as cost_at_list

    from source

)

select * from renamed
