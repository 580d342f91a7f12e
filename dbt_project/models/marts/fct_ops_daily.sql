-- Operations per UTC day (docs/metrics.md): runs ended and their outcome, queue wait of runs
-- started, pending GPU demand at the end of the day, node outages and their MTTR.
with

days as (

    select day_epoch from {{ ref('int_days') }}

),

runs as (

    select
        fct_runs.*,
        {{ to_epoch('submitted_at') }} as submitted_epoch,
        {{ to_epoch('started_at') }} as started_epoch,
        {{ to_epoch('ended_at') }} as ended_epoch
    from {{ ref('fct_runs') }} as fct_runs

),

ended as (

    select
        floor(ended_epoch / 86400) * 86400 as day_epoch,
        count(*) as runs_ended,
        sum(case when upper(state) in ('COMPLETED', 'SUCCEEDED') then 1 else 0 end)
            as runs_completed,
        sum(case when failure_class = 'infra' then 1 else 0 end) as runs_failed_infra,
        sum(case when failure_class = 'user' then 1 else 0 end) as runs_failed_user
    from runs
    where ended_epoch is not null
    group by floor(ended_epoch / 86400) * 86400

),

started as (

    select
        floor(started_epoch / 86400) * 86400 as day_epoch,
        count(*) as runs_started,
        {{ percentile_cont('queue_wait_seconds', 0.5) }} as queue_wait_p50_seconds,
        {{ percentile_cont('queue_wait_seconds', 0.95) }} as queue_wait_p95_seconds,
        avg(queue_wait_seconds) as queue_wait_mean_seconds
    from runs
    where started_epoch is not null
    group by floor(started_epoch / 86400) * 86400

),

pending as (

    select
        days.day_epoch,
        count(*) as runs_pending_at_day_end,
        sum(runs.gpus) as pending_gpus_at_day_end
    from days
    inner join runs
        on runs.submitted_epoch < days.day_epoch + 86400
        and (runs.started_epoch is null or runs.started_epoch >= days.day_epoch + 86400)
        and (runs.ended_epoch is null or runs.ended_epoch >= days.day_epoch + 86400)
    group by days.day_epoch

),

outages as (

    select
        floor(ended_epoch / 86400) * 86400 as day_epoch,
        count(*) as outages_ended,
        avg(duration_seconds) as mttr_seconds
    from {{ ref('int_ops_node_outages') }}
    where ended_epoch is not null
    group by floor(ended_epoch / 86400) * 86400

),

outages_started as (

    select
        floor(started_epoch / 86400) * 86400 as day_epoch,
        count(*) as outages_started
    from {{ ref('int_ops_node_outages') }}
    group by floor(started_epoch / 86400) * 86400

),

final as (

    select
        cast({{ from_epoch('days.day_epoch') }} as date) as day,
        cast(coalesce(ended.runs_ended, 0) as integer) as runs_ended,
        cast(coalesce(ended.runs_completed, 0) as integer) as runs_completed,
        cast(ended.runs_completed as double) / nullif(ended.runs_ended, 0) as completion_rate,
        cast(coalesce(ended.runs_failed_infra, 0) + coalesce(ended.runs_failed_user, 0) as integer)
            as runs_failed,
        cast(coalesce(ended.runs_failed_infra, 0) as integer) as runs_failed_infra,
        cast(coalesce(ended.runs_failed_user, 0) as integer) as runs_failed_user,
        cast(coalesce(started.runs_started, 0) as integer) as runs_started,
        started.queue_wait_p50_seconds,
        started.queue_wait_p95_seconds,
        started.queue_wait_mean_seconds,
        cast(coalesce(pending.runs_pending_at_day_end, 0) as integer) as runs_pending_at_day_end,
        cast(coalesce(pending.pending_gpus_at_day_end, 0) as integer) as pending_gpus_at_day_end,
        cast(coalesce(outages_started.outages_started, 0) as integer) as outages_started,
        cast(coalesce(outages.outages_ended, 0) as integer) as outages_ended,
        outages.mttr_seconds
    from days
    left join ended
        on ended.day_epoch = days.day_epoch
    left join started
        on started.day_epoch = days.day_epoch
    left join pending
        on pending.day_epoch = days.day_epoch
    left join outages
        on outages.day_epoch = days.day_epoch
    left join outages_started
        on outages_started.day_epoch = days.day_epoch

)

select * from final
