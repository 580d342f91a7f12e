-- Which CUR delivery restates which (docs/metrics.md, fct_billing_restatements): for every
-- delivery of a billing period that has an earlier one (ordered by delivery time, then first
-- ingest, then id), the delivery before it. `delivered_after_period_end`: the period had closed
-- (a restatement proper, not the daily refresh of an open month).
with

deliveries as (

    select distinct
        x_source,
        billing_period,
        delivery_id,
        delivered_at,
        ingested_at
    from {{ ref('stg_aws_cur__deliveries') }}

),

ordered as (

    select
        deliveries.*,
        lag(delivery_id) over (
            partition by x_source, billing_period
            order by delivered_at, ingested_at, delivery_id
        ) as previous_delivery_id,
        lag(delivered_at) over (
            partition by x_source, billing_period
            order by delivered_at, ingested_at, delivery_id
        ) as previous_delivered_at
    from deliveries

),

final as (

    select
        x_source,
        billing_period,
        delivery_id,
        delivered_at,
        ingested_at,
        previous_delivery_id,
        previous_delivered_at,
        {{ to_epoch('delivered_at') }} >= {{ to_epoch(dbt.dateadd('month', 1, dbt.cast("billing_period || '-01'", api.Column.translate_type('date')))) }}
            as delivered_after_period_end
    from ordered
    where previous_delivery_id is not null

)

select * from final
