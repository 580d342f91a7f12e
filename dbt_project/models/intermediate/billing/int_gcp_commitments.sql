-- GCP resource-based committed use discounts amortised onto the usage they cover (FOCUS
-- EffectiveCost; docs/metrics.md, "GCP committed use discounts"). A commitment's fee arrives on
-- rows of its own (SKU "Commitment v1: Nvidia L4 GPU in Frankfurt for 1 Year", no resource);
-- the usage it covers carries a COMMITTED_USAGE_DISCOUNT credit of about −cost. A fee row and
-- the covered usage are matched by billing account, currency, region, the resource family of
-- their SKUs (gcp_sku_family) and the usage hour; the CUD credits are the evidence of coverage.
-- Each covered row gets its share of the pool's fee: by covered quantity (pricing quantity ×
-- the credited fraction of its cost) at the commitment's rate (fee / committed quantity), or,
-- when a quantity is missing, the whole fee by CUD credit. The fee row keeps the rest: the
-- unused commitment. One row per adjusted line; `amortised` is added to its EffectiveCost and
-- sums to 0 per pool, so the bill's effective total is unchanged.
with

lines as (

    select
        'gcp:' || x_source || ':' || x_source_file || ':' || cast(x_line_number as string)
            as x_line_key,
        substr(invoice_month, 1, 4) || '-' || substr(invoice_month, 5, 2) as x_billing_period,
        coalesce(billing_account_id, '') as billing_account_id,
        currency,
        coalesce(region, '') as region,
        usage_start,
        cost,
        credits_cud_amount,
        pricing_quantity,
        {{ regex_match('sku_description', "'" ~ var('gcp_commitment_sku_pattern') ~ "'") }}
            as is_fee,
        {{ gcp_sku_family('sku_description') }} as family
    from {{ ref('stg_gcp_billing__lines') }}
    where coalesce(cost_type, 'regular') = 'regular'

),

fees as (

    select
        billing_account_id,
        currency,
        region,
        family,
        usage_start,
        sum(cost) as fee,
        -- null when any fee row has no quantity
        case when count(pricing_quantity) = count(*) then sum(pricing_quantity) end
            as committed_quantity
    from lines
    where is_fee and family is not null
    group by billing_account_id, currency, region, family, usage_start

),

covered as (

    select
        x_line_key,
        x_billing_period,
        billing_account_id,
        currency,
        region,
        family,
        usage_start,
        -credits_cud_amount as credited,
        case
            when cost > 0 then pricing_quantity * least(1.0, -credits_cud_amount / cost)
        end as covered_quantity
    from lines
    where not is_fee and credits_cud_amount < 0 and family is not null

),

pools as (

    select
        fees.billing_account_id,
        fees.currency,
        fees.region,
        fees.family,
        fees.usage_start,
        fees.fee,
        fees.committed_quantity,
        sum(covered.credited) as credited,
        case
            when count(covered.covered_quantity) = count(*) then sum(covered.covered_quantity)
        end as covered_quantity
    from fees
    inner join covered
        on covered.billing_account_id = fees.billing_account_id
        and covered.currency = fees.currency
        and covered.region = fees.region
        and covered.family = fees.family
        and covered.usage_start = fees.usage_start
    group by
        fees.billing_account_id, fees.currency, fees.region, fees.family, fees.usage_start,
        fees.fee, fees.committed_quantity

),

shares as (

    select
        covered.x_line_key,
        covered.x_billing_period,
        pools.billing_account_id,
        pools.currency,
        pools.region,
        pools.family,
        pools.usage_start,
        case
            when pools.committed_quantity > 0 and pools.covered_quantity is not null
                then pools.fee * covered.covered_quantity
                    / greatest(pools.committed_quantity, pools.covered_quantity)
            else pools.fee * covered.credited / pools.credited
        end as amortised
    from covered
    inner join pools
        on pools.billing_account_id = covered.billing_account_id
        and pools.currency = covered.currency
        and pools.region = covered.region
        and pools.family = covered.family
        and pools.usage_start = covered.usage_start

),

pool_amortised as (

    select billing_account_id, currency, region, family, usage_start, sum(amortised) as amortised
    from shares
    group by billing_account_id, currency, region, family, usage_start

),

-- each fee row gives up its part of what its pool amortised (by its share of the pool's fee)
fee_rows as (

    select
        lines.x_line_key,
        lines.x_billing_period,
        -pool_amortised.amortised * lines.cost / fees.fee as amortised
    from lines
    inner join fees
        on fees.billing_account_id = lines.billing_account_id
        and fees.currency = lines.currency
        and fees.region = lines.region
        and fees.family = lines.family
        and fees.usage_start = lines.usage_start
    inner join pool_amortised
        on pool_amortised.billing_account_id = lines.billing_account_id
        and pool_amortised.currency = lines.currency
        and pool_amortised.region = lines.region
        and pool_amortised.family = lines.family
        and pool_amortised.usage_start = lines.usage_start
    where lines.is_fee and fees.fee <> 0

),

final as (

    select x_line_key, x_billing_period, amortised, false as is_commitment_fee from shares
    union all
    select x_line_key, x_billing_period, amortised, true as is_commitment_fee from fee_rows

)

select * from final
