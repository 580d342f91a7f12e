-- CUR lines as landed (CUR 2.0 names; legacy CUR is mapped onto them at ingest), renamed.
with

source as (

    select * from {{ landing('aws_cur_lines') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        x_execution_id,
        x_billing_period,
        identity_line_item_id as line_item_id,
        identity_time_interval as time_interval,
        bill_billing_period_start_date as billing_period_start,
        bill_billing_period_end_date as billing_period_end,
        bill_payer_account_id as payer_account_id,
        line_item_usage_account_id as usage_account_id,
        line_item_line_item_type as line_item_type,
        line_item_usage_start_date as usage_start,
        line_item_usage_end_date as usage_end,
        line_item_product_code as product_code,
        line_item_usage_type as usage_type,
        line_item_operation as operation,
        line_item_resource_id as resource_id,
        cast(line_item_usage_amount as double) as usage_amount,
        line_item_line_item_description as line_item_description,
        cast(line_item_unblended_cost as double) as unblended_cost,
        cast(line_item_net_unblended_cost as double) as net_unblended_cost,
        line_item_currency_code as currency,
        product_instance_type as instance_type,
        product_region_code as region,
        cast(pricing_public_on_demand_cost as double) as public_on_demand_cost,
        pricing_unit,
        savings_plan_savings_plan_a_r_n as savings_plan_arn,
        cast(savings_plan_savings_plan_effective_cost as double) as savings_plan_effective_cost,
        cast(savings_plan_total_commitment_to_date as double) as savings_plan_total_commitment,
        cast(savings_plan_used_commitment as double) as savings_plan_used_commitment,
        reservation_reservation_a_r_n as reservation_arn,
        cast(reservation_effective_cost as double) as reservation_effective_cost,
        cast(reservation_unused_amortized_upfront_fee_for_billing_period as double)
            as reservation_unused_amortized_upfront_fee,
        cast(reservation_unused_recurring_fee as double) as reservation_unused_recurring_fee,
        split_line_item_parent_resource_id as split_parent_resource_id,
        cast(split_line_item_split_cost as double) as split_cost,
        cast(split_line_item_unused_cost as double) as split_unused_cost,
        cast(split_line_item_net_split_cost as double) as split_net_split_cost,
        cast(split_line_item_net_unused_cost as double) as split_net_unused_cost,
        cast(split_line_item_public_on_demand_split_cost as double)
            as split_public_on_demand_cost,
        cast(split_line_item_split_usage_ratio as double) as split_usage_ratio,
        capacity_reservation_capacity_reservation_arn as capacity_reservation_arn,
        capacity_reservation_capacity_reservation_status as capacity_reservation_status,
        capacity_reservation_capacity_reservation_type as capacity_reservation_type,
        resource_tags

    from source

)

select * from renamed
