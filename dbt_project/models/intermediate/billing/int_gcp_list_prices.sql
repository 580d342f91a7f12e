-- GCP list prices of GPU SKUs from the Cloud Catalog, one row per SKU, currency and price
-- version: a fetch whose first-tier price differs from the SKU's previous fetch starts a version
-- valid until the next one. The first version also covers the time before it was fetched
-- (valid_from null), so every bill line of a listed SKU finds exactly one price.
with

skus as (

    select * from {{ ref('stg_gcp_catalog__skus') }}

),

-- one price per SKU, currency and fetch: the first tier, latest effective time
fetches as (

    select
        sku_id,
        currency_code,
        fetched_at,
        unit_price,
        usage_unit,
        sku_description,
        row_number() over (
            partition by sku_id, currency_code, fetched_at
            order by tier_start_usage_amount, effective_time desc
        ) as rank_in_fetch
    from skus

),

changes as (

    select
        *,
        lag(unit_price) over (
            partition by sku_id, currency_code order by fetched_at
        ) as previous_price
    from fetches
    where rank_in_fetch = 1

),

versions as (

    select sku_id, currency_code, fetched_at, unit_price, usage_unit, sku_description
    from changes
    where previous_price is null or previous_price <> unit_price

),

final as (

    select
        sku_id,
        currency_code,
        unit_price,
        usage_unit,
        sku_description,
        fetched_at,
        case
            when row_number() over (partition by sku_id, currency_code order by fetched_at) = 1
                then null
            else fetched_at
        end as valid_from,
        lead(fetched_at) over (partition by sku_id, currency_code order by fetched_at)
            as valid_to
    from versions

)

select * from final
