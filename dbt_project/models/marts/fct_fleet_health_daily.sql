-- Fleet health per node and day (docs/metrics.md): uptime / downtime, XIDs, ECC errors,
-- remapped rows, clock-throttle seconds by reason, stragglers and scheduler outage events,
-- joined per node-day from intermediate/health/:
--   downtime: int_health_node_days (per hour the node's most-down GPU);
--   XIDs: int_health_node_day_xids (DCGM_EXP_XID_ERRORS_COUNT where exported, else changes of
--     the DCGM_FI_DEV_XID_ERRORS gauge to a non-zero value: a lower bound);
--   throttle, ECC, remapped rows: int_health_node_day_signals, null where the node does not
--     export the field;
--   stragglers: int_health_node_day_stragglers; outages: int_health_node_day_outages.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the
-- days from the first hour int_fleet_health_recompute_from chose on (the GPU-hour states' first
-- day or the day before the range, or the first day whose XIDs, stragglers or outages changed).
-- (the first hour: {{ ref('int_fleet_health_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_fleet_health_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_fleet_health_recompute_from') %}
{%- set xid_codes = (var('fatal_xids') + var('health_xid_codes')) | unique | sort %}
with

node_days as (

    select * from {{ ref('int_health_node_days') }}
    where day_epoch >= {{ from_hour }}

),

xids as (

    select * from {{ ref('int_health_node_day_xids') }}
    where day_epoch >= {{ from_hour }}

),

signals as (

    select * from {{ ref('int_health_node_day_signals') }}
    where day_epoch >= {{ from_hour }}

),

stragglers as (

    select * from {{ ref('int_health_node_day_stragglers') }}
    where day_epoch >= {{ from_hour }}

),

outages as (

    select * from {{ ref('int_health_node_day_outages') }}
    where day_epoch >= {{ from_hour }}

),

nodes as (

    select * from {{ ref('dim_nodes') }}

),

final as (

    select
        cast({{ from_epoch('node_days.day_epoch') }} as date) as day,
        node_days.host,
        nodes.provider,
        nodes.site,
        nodes.cluster,
        node_days.gpus,
        node_days.accounted_seconds,
        node_days.accounted_seconds - node_days.downtime_seconds as uptime_seconds,
        node_days.downtime_seconds,
        node_days.gpu_down_seconds,
        cast(coalesce(xids.xid_count, 0) as integer) as xid_count,
        {%- for code in xid_codes %}
        cast(coalesce(xids.xid_{{ code }}_count, 0) as integer) as xid_{{ code }}_count,
        {%- endfor %}
        cast(coalesce(xids.fatal_xid_count, 0) as integer) as fatal_xid_count,
        coalesce(signals.xid_count_is_lower_bound, true) as xid_count_is_lower_bound,
        signals.ecc_sbe_errors,
        signals.ecc_dbe_errors,
        signals.correctable_remapped_rows,
        signals.uncorrectable_remapped_rows,
        signals.row_remap_failure,
        signals.throttle_gpu_seconds,
        {%- for name in var('throttle_reasons') %}
        signals.throttle_{{ name }}_gpu_seconds,
        {%- endfor %}
        signals.thermal_throttle_gpu_seconds,
        signals.power_throttle_gpu_seconds,
        cast(coalesce(stragglers.stragglers, 0) as integer) as stragglers,
        coalesce(stragglers.straggler_gpu_seconds, 0) as straggler_gpu_seconds,
        cast(coalesce(outages.outage_events, 0) as integer) as outage_events,
        coalesce(outages.scheduler_down_seconds, 0) as scheduler_down_seconds,
        node_days.day_epoch
    from node_days
    left join nodes
        on nodes.host = node_days.host
    left join xids
        on xids.host = node_days.host and xids.day_epoch = node_days.day_epoch
    left join signals
        on signals.host = node_days.host and signals.day_epoch = node_days.day_epoch
    left join stragglers
        on stragglers.host = node_days.host and stragglers.day_epoch = node_days.day_epoch
    left join outages
        on outages.host = node_days.host and outages.day_epoch = node_days.day_epoch

)

select * from final
