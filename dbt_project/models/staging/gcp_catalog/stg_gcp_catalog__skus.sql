-- Cloud Catalog list prices of GPU SKUs, one row per SKU, pricing tier and fetch (the landing
-- keeps every fetch, so this is the price history with its fetch dates).
with

source as (

    select * from {{ landing('gcp_catalog_skus') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        service_id,
        service_display_name,
        sku_id,
        description as sku_description,
        resource_family,
        resource_group,
        usage_type,
        service_regions,
        usage_unit,
        usage_unit_description,
        cast(tier_start_usage_amount as double) as tier_start_usage_amount,
        cast(unit_price as double) as unit_price,
        currency_code,
        effective_time,
        fetched_at

    from source

)

select * from renamed
