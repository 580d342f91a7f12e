-- The time each GPU straggled, whatever the metric (docs/metrics.md, fct_fleet_health_daily
-- `stragglers`): its straggler episodes (int_health_straggler_episodes) merged where they
-- overlap or touch, so a GPU trailing on utilisation and SM clock at once counts once.
with

episodes as (

    select
        gpu_uuid,
        host,
        started_epoch,
        ended_epoch
    from {{ ref('int_health_straggler_episodes') }}

),

ordered as (

    select
        episodes.*,
        max(ended_epoch) over (
            partition by gpu_uuid
            order by started_epoch, ended_epoch
            rows between unbounded preceding and 1 preceding
        ) as prev_max_end
    from episodes

),

islands as (

    select
        ordered.*,
        sum(case when prev_max_end is null or started_epoch > prev_max_end then 1 else 0 end)
            over (
                partition by gpu_uuid
                order by started_epoch, ended_epoch
                rows between unbounded preceding and current row
            ) as island
    from ordered

),

final as (

    select
        gpu_uuid,
        host,
        min(started_epoch) as started_epoch,
        max(ended_epoch) as ended_epoch
    from islands
    group by gpu_uuid, host, island

)

select * from final
