-- CUR lines (CUR 2.0 and legacy) in FOCUS shape, one row per landed line. Effective (amortised)
-- cost by line type as in the CUR query library; billed cost is the net unblended cost when the
-- line has one, else the unblended cost; list cost is the public on-demand cost. The same rules
-- are in ingest/aws_cur.py (`cost_expressions`) for the delivery totals of
-- fct_billing_restatements: change both together. Split cost allocation rows (EKS/ECS pods) keep
-- their line-item costs here (their share of the parent instance is in int_billing__aws_split).
-- x_line_key is the line's lineage (source, period, file, row): CUR line item ids are not unique
-- in every export (split rows, Athena copies). EC2 Capacity Block fees are amortised over the
-- block's instance-hours (int_aws_capacity_blocks: its `amortised` is added to EffectiveCost).
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

lines as (

    select * from {{ ref('stg_aws_cur__line_items') }}
    where {{ in_recomputed_periods('x_billing_period') }}

),

capacity_blocks as (

    select x_line_key, amortised from {{ ref('int_aws_capacity_blocks') }}

),

final as (

    select
        'aws:' || x_source || ':' || x_billing_period || ':' || x_source_file || ':'
            || cast(x_line_number as string) as x_line_key,
        'aws' as x_provider,
        x_source,
        x_source_file,
        coalesce(net_unblended_cost, unblended_cost) as billed_cost,
        case line_item_type
            when 'SavingsPlanCoveredUsage' then savings_plan_effective_cost
            when 'SavingsPlanRecurringFee'
                then savings_plan_total_commitment - savings_plan_used_commitment
            when 'SavingsPlanNegation' then 0
            when 'SavingsPlanUpfrontFee' then 0
            when 'DiscountedUsage' then reservation_effective_cost
            when 'RIFee'
                then coalesce(reservation_unused_amortized_upfront_fee, 0)
                    + coalesce(reservation_unused_recurring_fee, 0)
            else unblended_cost
        end + coalesce(capacity_blocks.amortised, 0) as effective_cost,
        coalesce(public_on_demand_cost, unblended_cost) as list_cost,
        unblended_cost as contracted_cost,
        usage_start as charge_period_start,
        usage_end as charge_period_end,
        billing_period_start,
        billing_period_end,
        'AWS' as service_provider_name,
        product_code as service_name,
        case
            when product_code = 'AmazonEC2' then 'Compute'
            when product_code = 'AmazonS3' then 'Storage'
            else 'Other'
        end as service_category,
        case
            when line_item_type in ('Tax') then 'Tax'
            when line_item_type in ('Credit', 'Refund') then 'Credit'
            when line_item_type in ('SavingsPlanRecurringFee', 'SavingsPlanUpfrontFee', 'RIFee')
                then 'Purchase'
            else 'Usage'
        end as charge_category,
        line_item_type as x_line_item_type,
        resource_id,
        usage_type as sku_id,
        usage_amount as pricing_quantity,
        pricing_unit,
        region as region_id,
        usage_account_id as sub_account_id,
        resource_tags as tags,
        currency as billing_currency,
        {{ period_epoch('x_billing_period') }} as billing_period_epoch
    from lines
    left join capacity_blocks
        on capacity_blocks.x_line_key = 'aws:' || lines.x_source || ':' || lines.x_billing_period
            || ':' || lines.x_source_file || ':' || cast(lines.x_line_number as string)

)

select * from final
