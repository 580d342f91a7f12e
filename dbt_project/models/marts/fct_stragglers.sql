-- One row per straggler episode: a GPU of a multi-GPU run whose utilisation or SM clock
-- trailed the median of the run's other GPUs by more than var straggler_margin for at least
-- var straggler_min_seconds (docs/metrics.md). A GPU trailing on both metrics has a row each.
with

episodes as (

    select * from {{ ref('int_health_straggler_episodes') }}

),

runs as (

    select run_id, team, cluster from {{ ref('fct_runs') }}

),

final as (

    select
        episodes.run_id,
        episodes.gpu_uuid,
        episodes.host,
        episodes.gpu_index,
        episodes.metric,
        {{ from_epoch('episodes.started_epoch') }} as started_at,
        {{ from_epoch('episodes.ended_epoch') }} as ended_at,
        episodes.seconds,
        episodes.mean_value,
        episodes.mean_median_other,
        1 - episodes.mean_value / nullif(episodes.mean_median_other, 0) as mean_shortfall,
        runs.team,
        runs.cluster
    from episodes
    left join runs
        on runs.run_id = episodes.run_id

)

select * from final
