-- Uptime and downtime per node and UTC day (docs/metrics.md, fct_fleet_health_daily): in each
-- accounted hour the node is down for as long as its most-down GPU (a node with a GPU down
-- cannot run whole-node jobs and is drained); `gpu_down_seconds` is the GPUs' down time summed,
-- `telemetry_gap_seconds` their telemetry gaps (what the data-health findings report per day).
-- Stored by day with the GPU-hour states it sums (macros/incremental.sql): a run rewrites the
-- days int_gpu_hour_states recomputed (from the first day of its range, or earlier when node
-- costs or failure signals changed; every day when the GPUs changed).
-- (the first hour: {{ ref('int_gpu_hour_states_recompute_from') }})
{{ incremental_by_day(to_last_day='int_gpu_hour_states_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_gpu_hour_states_recompute_from') %}
with

gpu_hours as (

    select
        host,
        hour_epoch,
        down_seconds,
        telemetry_gap_seconds
    from {{ ref('int_gpu_hour_states') }}
    where hour_epoch >= {{ from_hour }}

),

node_hours as (

    select
        host,
        floor(hour_epoch / 86400) * 86400 as day_epoch,
        hour_epoch,
        max(down_seconds) as node_down_seconds,
        sum(down_seconds) as gpu_down_seconds,
        sum(telemetry_gap_seconds) as telemetry_gap_seconds,
        count(*) as gpus
    from gpu_hours
    group by host, hour_epoch

),

final as (

    select
        host,
        max(gpus) as gpus,
        3600 * count(*) as accounted_seconds,
        sum(node_down_seconds) as downtime_seconds,
        sum(gpu_down_seconds) as gpu_down_seconds,
        sum(telemetry_gap_seconds) as telemetry_gap_seconds,
        day_epoch
    from node_hours
    group by host, day_epoch

)

select * from final
