-- Split cost allocation (CUR `split_line_item_*`, EKS/ECS pods and tasks): for each pod/task row,
-- the instance it ran on and its share of that instance's cost. The share is
-- split cost + unused cost (the instance's idle capacity redistributed to its pods), net of
-- discounts when the export has the net columns, as in the CUR query library's EKS queries. The
-- instance's own line carries the bill; the share is an allocation of it, never added to it.
-- Stored by billing period like the bill lines it joins (macros/billing_periods.sql): a run
-- rewrites the periods from the one int_billing_lines_recompute_from chose on (the first
-- period: {{ ref('int_billing_lines_recompute_from') }}), reading only their landed lines.
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

lines as (

    select * from {{ ref('stg_aws_cur__line_items') }}
    where {{ in_recomputed_periods('x_billing_period') }}

),

final as (

    select
        'aws:' || x_source || ':' || x_billing_period || ':' || x_source_file || ':'
            || cast(x_line_number as string) as x_line_key,
        split_parent_resource_id,
        coalesce(split_net_split_cost, split_cost, 0)
            + coalesce(split_net_unused_cost, split_unused_cost, 0) as split_cost,
        split_public_on_demand_cost,
        split_usage_ratio,
        {{ period_epoch('x_billing_period') }} as billing_period_epoch
    from lines
    where split_parent_resource_id is not null and split_parent_resource_id <> ''

)

select * from final
