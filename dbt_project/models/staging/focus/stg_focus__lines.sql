-- FOCUS lines as landed (docs/landing.md, `focus_lines`): FOCUS files of any provider and
-- version, and Azure / OCI native exports mapped to FOCUS at ingest. FOCUS names become
-- snake_case (BilledCost → billed_cost); ProviderName (1.0–1.2) and ServiceProviderName (1.3)
-- are both kept as delivered.
{%- set focus_columns = [
    'AvailabilityZone', 'BilledCost', 'BillingAccountId', 'BillingAccountName', 'BillingCurrency',
    'BillingPeriodEnd', 'BillingPeriodStart', 'ChargeCategory', 'ChargeClass', 'ChargeDescription',
    'ChargeFrequency', 'ChargePeriodEnd', 'ChargePeriodStart', 'CommitmentDiscountCategory',
    'CommitmentDiscountId', 'CommitmentDiscountName', 'CommitmentDiscountStatus',
    'CommitmentDiscountType', 'ConsumedQuantity', 'ConsumedUnit', 'ContractedCost',
    'ContractedUnitPrice', 'EffectiveCost', 'InvoiceIssuerName', 'ListCost', 'ListUnitPrice',
    'PricingCategory', 'PricingQuantity', 'PricingUnit', 'ProviderName', 'PublisherName',
    'RegionId', 'RegionName', 'ResourceId', 'ResourceName', 'ResourceType', 'ServiceCategory',
    'ServiceName', 'SkuId', 'SkuPriceId', 'SubAccountId', 'SubAccountName', 'Tags',
    'CapacityReservationId', 'CapacityReservationStatus', 'CommitmentDiscountQuantity',
    'CommitmentDiscountUnit', 'ServiceSubcategory', 'SkuMeter', 'SkuPriceDetails',
    'BillingAccountType', 'SubAccountType', 'InvoiceId', 'PricingCurrency',
    'PricingCurrencyContractedUnitPrice', 'PricingCurrencyEffectiveCost',
    'PricingCurrencyListUnitPrice', 'ServiceProviderName', 'HostProviderName',
    'AllocatedMethodId', 'AllocatedMethodDetails', 'AllocatedResourceId', 'AllocatedResourceName',
    'AllocatedTags',
] -%}
{%- set doubles = [
    'BilledCost', 'ConsumedQuantity', 'ContractedCost', 'ContractedUnitPrice', 'EffectiveCost',
    'ListCost', 'ListUnitPrice', 'PricingQuantity', 'CommitmentDiscountQuantity',
    'PricingCurrencyContractedUnitPrice', 'PricingCurrencyEffectiveCost',
    'PricingCurrencyListUnitPrice',
] %}
with

source as (

    select * from {{ landing('focus_lines') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        x_provider,
        x_source_format,
        x_focus_version,
        x_billing_period,
        x_extra,
        {%- for column in focus_columns %}
        {%- set snake = modules.re.sub('(?<!^)(?=[A-Z])', '_', column).lower() %}
        {% if column in doubles -%}
        cast({{ adapter.quote(column) }} as double) as {{ snake }}
        {%- else -%}
        {{ adapter.quote(column) }} as {{ snake }}
        {%- endif %}{{ ',' if not loop.last }}
        {%- endfor %}

    from source

)

select * from renamed
