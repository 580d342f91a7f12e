-- FOCUS lines (FOCUS files of any provider; Azure and OCI exports mapped at ingest) in the
-- shape of int_billing_lines. The provider is the one ingest derived from ServiceProviderName
-- (1.3) or ProviderName (1.0–1.2): aws | azure | gcp | oci | a neocloud's name.
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

lines as (

    select * from {{ ref('stg_focus__lines') }}
    where {{ in_recomputed_periods('x_billing_period') }}

),

final as (

    select
        'focus:' || x_source || ':' || x_source_file || ':' || cast(x_line_number as string)
            as x_line_key,
        x_provider,
        x_source,
        x_source_file,
        billed_cost,
        coalesce(effective_cost, billed_cost) as effective_cost,
        coalesce(list_cost, contracted_cost, billed_cost) as list_cost,
        coalesce(contracted_cost, billed_cost) as contracted_cost,
        charge_period_start,
        charge_period_end,
        billing_period_start,
        billing_period_end,
        coalesce(service_provider_name, provider_name) as service_provider_name,
        service_name,
        service_category,
        charge_category,
        case
            when charge_class = 'Correction' then charge_category || ' (correction)'
            else charge_category
        end as x_line_item_type,
        resource_id,
        sku_id,
        pricing_quantity,
        pricing_unit,
        coalesce(region_id, region_name) as region_id,
        sub_account_id,
        tags,
        billing_currency,
        {{ period_epoch('x_billing_period') }} as billing_period_epoch
    from lines

)

select * from final
