-- Every bill line in FOCUS shape (columns in the line's BillingCurrency) plus reporting-currency
-- costs and lineage. On-prem nodes appear as synthetic rate-card lines.
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

lines as (

    select * from {{ ref('int_billing_lines') }}
    where billing_period_epoch >= {{ first_recomputed_hour('int_billing_lines_recompute_from') }}

),

final as (

    select
        x_line_key,
        billed_cost as BilledCost,
        effective_cost as EffectiveCost,
        list_cost as ListCost,
        contracted_cost as ContractedCost,
        charge_period_start as ChargePeriodStart,
        charge_period_end as ChargePeriodEnd,
        billing_period_start as BillingPeriodStart,
        billing_period_end as BillingPeriodEnd,
        service_provider_name as ServiceProviderName,
        service_provider_name as ProviderName,
        service_name as ServiceName,
        service_category as ServiceCategory,
        charge_category as ChargeCategory,
        resource_id as ResourceId,
        sku_id as SkuId,
        pricing_quantity as PricingQuantity,
        pricing_unit as PricingUnit,
        region_id as RegionId,
        sub_account_id as SubAccountId,
        tags as Tags,
        billing_currency as BillingCurrency,
        x_provider,
        x_source,
        x_source_file,
        x_line_item_type,
        x_host,
        x_host is null as x_unattributed,
        x_billed_cost_reporting,
        x_effective_cost_reporting,
        x_list_cost_reporting,
        x_split_parent_resource_id,
        x_split_cost,
        x_split_cost_reporting,
        billing_period_epoch
    from lines

)

select * from final
