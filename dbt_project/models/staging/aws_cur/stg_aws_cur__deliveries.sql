-- Every CUR delivery (manifest) landed, with its totals by service and currency: kept across
-- restatements, unlike the lines (ingest/aws_deliveries.py).
with

source as (

    select * from {{ landing('aws_cur_deliveries') }}

),

renamed as (

    select
        x_source,
        billing_period,
        delivery_id,
        format as cur_format,
        manifest as manifest_uri,
        manifest_version,
        delivered_at,
        ingested_at,
        coalesce(service, '') as service_name,
        coalesce(currency, '') as billing_currency,
        line_count,
        billed_cost,
        effective_cost,
        list_cost

    from source

)

select * from renamed
