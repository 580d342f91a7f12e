-- Stragglers per node and accounted UTC day (docs/metrics.md, fct_fleet_health_daily): how many
-- of the node's GPUs straggled that day and for how long (int_health_straggler_intervals, cut
-- at midnight). Node-days without stragglers have no row.
with

node_days as (

    select host, day_epoch from {{ ref('int_health_node_days') }}

),

intervals as (

    select * from {{ ref('int_health_straggler_intervals') }}

),

final as (

    select
        node_days.host,
        node_days.day_epoch,
        count(distinct intervals.gpu_uuid) as stragglers,
        sum(
            least(intervals.ended_epoch, node_days.day_epoch + 86400)
            - greatest(intervals.started_epoch, node_days.day_epoch)
        ) as straggler_gpu_seconds
    from node_days
    inner join intervals
        on intervals.host = node_days.host
        and intervals.started_epoch < node_days.day_epoch + 86400
        and intervals.ended_epoch > node_days.day_epoch
    group by node_days.host, node_days.day_epoch

)

select * from final
