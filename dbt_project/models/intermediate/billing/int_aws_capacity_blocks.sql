-- EC2 Capacity Blocks for ML: the upfront reservation fee amortised over the block's reserved
-- instance-hours (docs/metrics.md, "EC2 Capacity Blocks for ML"). The fee is a line of its own
-- (usage type "<region>-CapacityBlockFee:<instance type>", var
-- aws_capacity_block_fee_usage_type) naming the reservation in its capacity reservation ARN or
-- its resource id (the ARN or the `cr-` id); the block's hours are the lines with that
-- capacity_reservation_arn and status Used (an instance ran in the block: its resource is the
-- instance) or Unused (reserved, not used: its resource is the reservation). Each such line gets
-- fee × its usage amount (instance-hours) / the block's; the fee line gives it all up. One row
-- per adjusted line; `amortised` is added to its EffectiveCost and sums to 0 per block.
with

lines as (

    select
        'aws:' || x_source || ':' || x_billing_period || ':' || x_source_file || ':'
            || cast(x_line_number as string) as x_line_key,
        x_billing_period,
        currency,
        usage_type,
        resource_id,
        capacity_reservation_arn,
        capacity_reservation_status,
        usage_amount,
        unblended_cost,
        coalesce(usage_type, '') like '%{{ var("aws_capacity_block_fee_usage_type") }}%' as is_fee
    from {{ ref('stg_aws_cur__line_items') }}

),

fees as (

    select
        x_line_key,
        x_billing_period,
        currency,
        coalesce(capacity_reservation_arn, resource_id) as reservation,
        unblended_cost as fee
    from lines
    where is_fee and coalesce(capacity_reservation_arn, resource_id) is not null

),

block_hours as (

    select
        x_line_key,
        x_billing_period,
        currency,
        capacity_reservation_arn,
        usage_amount
    from lines
    where not is_fee
        and capacity_reservation_arn is not null
        and capacity_reservation_status in ('Used', 'Unused')
        and usage_amount > 0

),

-- a fee names its block by the full ARN or by the reservation id that ends it
fee_blocks as (

    select
        fees.x_line_key as fee_line_key,
        fees.x_billing_period as fee_billing_period,
        fees.fee,
        block_hours.x_line_key,
        block_hours.x_billing_period,
        block_hours.usage_amount,
        sum(block_hours.usage_amount) over (partition by fees.x_line_key) as block_hours
    from fees
    inner join block_hours
        on block_hours.currency = fees.currency
        and (
            block_hours.capacity_reservation_arn = fees.reservation
            or block_hours.capacity_reservation_arn like '%/' || fees.reservation
        )

),

shares as (

    select x_line_key, x_billing_period, sum(fee * usage_amount / block_hours) as amortised
    from fee_blocks
    group by x_line_key, x_billing_period

),

fee_lines as (

    select
        fee_line_key as x_line_key,
        fee_billing_period as x_billing_period,
        -max(fee) as amortised
    from fee_blocks
    group by fee_line_key, fee_billing_period

),

final as (

    select x_line_key, x_billing_period, amortised, false as is_capacity_block_fee from shares
    union all
    select x_line_key, x_billing_period, amortised, true as is_capacity_block_fee
    from fee_lines

)

select * from final
