-- Node outages from `sacctmgr show event` (stg_slurm__node_events where is_outage), one row per
-- cluster, node and start: when several exports hold the event, its closed form wins.
with

events as (

    select * from {{ ref('stg_slurm__node_events') }}
    where is_outage

),

final as (

    select
        cluster,
        node as host,
        started_at,
        max(ended_at) as ended_at,
        {{ to_epoch('started_at') }} as started_epoch,
        {{ to_epoch('max(ended_at)') }} as ended_epoch,
        {{ to_epoch('max(ended_at)') }} - {{ to_epoch('started_at') }} as duration_seconds,
        max(state) as state,
        max(reason) as reason
    from events
    group by cluster, node, started_at

)

select * from final
