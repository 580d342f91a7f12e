-- Fleet health per node and day (docs/metrics.md): uptime / downtime, XIDs, ECC errors,
-- remapped rows, clock-throttle seconds by reason, stragglers and scheduler outage events.
--   downtime: in each hour, the most down_seconds of any of the node's GPUs in fct_gpu_hours
--     (a node with a GPU down cannot run whole-node jobs and is drained);
--   XIDs: int_health_xids (DCGM_EXP_XID_ERRORS_COUNT where exported, else changes of the
--     DCGM_FI_DEV_XID_ERRORS gauge to a non-zero value: a lower bound);
--   throttle, ECC, remapped rows: int_health_node_day_signals, null where the node does not
--     export the field.
{%- set xid_codes = (var('fatal_xids') + var('health_xid_codes')) | unique | sort %}
with

gpu_hours as (

    select
        host,
        {{ to_epoch('hour') }} as hour_epoch,
        down_seconds
    from {{ ref('fct_gpu_hours') }}

),

node_hours as (

    select
        host,
        floor(hour_epoch / 86400) * 86400 as day_epoch,
        hour_epoch,
        max(down_seconds) as node_down_seconds,
        sum(down_seconds) as gpu_down_seconds,
        count(*) as gpus
    from gpu_hours
    group by host, hour_epoch

),

node_days as (

    select
        host,
        day_epoch,
        max(gpus) as gpus,
        3600 * count(*) as accounted_seconds,
        sum(node_down_seconds) as downtime_seconds,
        sum(gpu_down_seconds) as gpu_down_seconds
    from node_hours
    group by host, day_epoch

),

xids as (

    select
        host,
        day_epoch,
        sum(xid_count) as xid_count,
        {%- for code in xid_codes %}
        sum(case when xid = {{ code }} then xid_count else 0 end) as xid_{{ code }}_count,
        {%- endfor %}
        sum(case when is_fatal then xid_count else 0 end) as fatal_xid_count
    from {{ ref('int_health_xids') }}
    group by host, day_epoch

),

signals as (

    select * from {{ ref('int_health_node_day_signals') }}

),

straggler_episodes as (

    select
        gpu_uuid,
        host,
        started_epoch,
        ended_epoch
    from {{ ref('int_health_straggler_episodes') }}

),

straggler_ordered as (

    -- a GPU trailing on both metrics at once counts once: merge overlapping episodes
    select
        straggler_episodes.*,
        max(ended_epoch) over (
            partition by gpu_uuid
            order by started_epoch, ended_epoch
            rows between unbounded preceding and 1 preceding
        ) as prev_max_end
    from straggler_episodes

),

straggler_islands as (

    select
        straggler_ordered.*,
        sum(case when prev_max_end is null or started_epoch > prev_max_end then 1 else 0 end)
            over (
                partition by gpu_uuid
                order by started_epoch, ended_epoch
                rows between unbounded preceding and current row
            ) as island
    from straggler_ordered

),

straggler_intervals as (

    select
        gpu_uuid,
        host,
        island,
        min(started_epoch) as started_epoch,
        max(ended_epoch) as ended_epoch
    from straggler_islands
    group by gpu_uuid, host, island

),

stragglers as (

    select
        node_days.host,
        node_days.day_epoch,
        count(distinct straggler_intervals.gpu_uuid) as stragglers,
        sum(
            least(straggler_intervals.ended_epoch, node_days.day_epoch + 86400)
            - greatest(straggler_intervals.started_epoch, node_days.day_epoch)
        ) as straggler_gpu_seconds
    from node_days
    inner join straggler_intervals
        on straggler_intervals.host = node_days.host
        and straggler_intervals.started_epoch < node_days.day_epoch + 86400
        and straggler_intervals.ended_epoch > node_days.day_epoch
    group by node_days.host, node_days.day_epoch

),

outages as (

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
    inner join {{ ref('int_ops_node_outages') }} as outages
        on outages.host = node_days.host
        and outages.started_epoch < node_days.day_epoch + 86400
        and coalesce(outages.ended_epoch, node_days.day_epoch + 86400) > node_days.day_epoch
    group by node_days.host, node_days.day_epoch

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
        coalesce(outages.scheduler_down_seconds, 0) as scheduler_down_seconds
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
