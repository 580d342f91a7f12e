-- Scheduler outage events per node and accounted UTC day (docs/metrics.md,
-- fct_fleet_health_daily): outages that started that day, and the seconds of the day the
-- node's outages (int_ops_node_outages) cover, an open outage up to the end of the day.
-- Node-days without outages have no row.
with

node_days as (

    select host, day_epoch from {{ ref('int_health_node_days') }}

),

outages as (

    select * from {{ ref('int_ops_node_outages') }}

),

final as (

    select
        node_days.host,
        node_days.day_epoch,
        sum(case
            when outages.started_epoch >= node_days.day_epoch
                and outages.started_epoch < node_days.day_epoch + 86400 then 1
            else 0
        end) as outage_events,
        sum(
            least(
                coalesce(outages.ended_epoch, node_days.day_epoch + 86400),
                node_days.day_epoch + 86400
            )
            - greatest(outages.started_epoch, node_days.day_epoch)
        ) as scheduler_down_seconds
    from node_days
    inner join outages
        on outages.host = node_days.host
        and outages.started_epoch < node_days.day_epoch + 86400
        and coalesce(outages.ended_epoch, node_days.day_epoch + 86400) > node_days.day_epoch
    group by node_days.host, node_days.day_epoch

)

select * from final
