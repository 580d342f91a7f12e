-- Operations per UTC day (docs/metrics.md): runs ended and their outcome, queue wait of runs
-- started, pending GPU demand at the end of the day (Kueue workloads waiting for admission
-- included), Kueue admission waits, evictions and requeues, node outages and their MTTR.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the
-- days from the first hour int_ops_daily_recompute_from chose on (its range, or the first
-- earlier day a run, a Kueue workload or dump or an outage that changed counts differently in).
-- (the first hour: {{ ref('int_ops_daily_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_ops_daily_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_ops_daily_recompute_from') %}
with

days as (

    select day_epoch from {{ ref('int_days') }}
    where day_epoch >= {{ from_hour }}

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

kueue_workloads as (

    select
        int_kueue_workloads.*,
        {{ to_epoch('created_at') }} as created_epoch,
        {{ to_epoch('first_admitted_at') }} as admitted_epoch,
        {{ to_epoch('finished_at') }} as finished_epoch,
        {{ to_epoch('gone_at') }} as gone_epoch
    from {{ ref('int_kueue_workloads') }} as int_kueue_workloads

),

-- workloads with pods in fct_runs: their pods carry the workload's submission, so they are
-- pending runs from the workload's creation already
kueue_with_pods as (

    select distinct cluster, workload_uid from {{ ref('int_kueue_pod_workloads') }}

),

-- workloads created before the day's end and not admitted, finished or gone by then, that no
-- pod in fct_runs stands for; a plain pod's workload is left out (its gated pod is pending in
-- fct_runs once a dump shows it)
kueue_pending as (

    select
        days.day_epoch,
        count(*) as workloads_pending,
        sum(kueue_workloads.gpus_requested) as pending_gpus
    from days
    inner join kueue_workloads
        on kueue_workloads.created_epoch < days.day_epoch + 86400
        and (
            kueue_workloads.admitted_epoch is null
            or kueue_workloads.admitted_epoch >= days.day_epoch + 86400
        )
        and (
            kueue_workloads.finished_epoch is null
            or kueue_workloads.finished_epoch >= days.day_epoch + 86400
        )
        and (
            kueue_workloads.gone_epoch is null
            or kueue_workloads.gone_epoch >= days.day_epoch + 86400
        )
    left join kueue_with_pods
        on coalesce(kueue_with_pods.cluster, '') = coalesce(kueue_workloads.cluster, '')
        and kueue_with_pods.workload_uid = kueue_workloads.workload_uid
    where
        coalesce(kueue_workloads.owner_kind, '') <> 'Pod'
        and kueue_with_pods.workload_uid is null
    group by days.day_epoch

),

kueue_admitted as (

    select
        floor(admitted_epoch / 86400) * 86400 as day_epoch,
        count(*) as workloads_admitted,
        {{ percentile_cont('admission_wait_seconds', 0.5) }} as admission_wait_p50_seconds,
        {{ percentile_cont('admission_wait_seconds', 0.95) }} as admission_wait_p95_seconds
    from kueue_workloads
    where admitted_epoch is not null
    group by floor(admitted_epoch / 86400) * 86400

),

-- evictions and requeues counted on the day of the dump that first shows them: the growth of
-- each workload's counts from one dump to the next (the first dump's counts on its day)
kueue_counts as (

    select
        cluster,
        workload_uid,
        {{ to_epoch('snapshot_at') }} as snapshot_epoch,
        evicted_count
            - coalesce(lag(evicted_count) over (
                partition by cluster, workload_uid order by snapshot_at
            ), 0) as new_evictions,
        requeue_count
            - coalesce(lag(requeue_count) over (
                partition by cluster, workload_uid order by snapshot_at
            ), 0) as new_requeues
    from {{ ref('stg_kueue__workloads') }}

),

kueue_events as (

    select
        floor(snapshot_epoch / 86400) * 86400 as day_epoch,
        sum(greatest(new_evictions, 0)) as evictions,
        sum(greatest(new_requeues, 0)) as requeues
    from kueue_counts
    group by floor(snapshot_epoch / 86400) * 86400

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
        cast(
            coalesce(pending.runs_pending_at_day_end, 0)
            + coalesce(kueue_pending.workloads_pending, 0) as integer
        ) as runs_pending_at_day_end,
        cast(
            coalesce(pending.pending_gpus_at_day_end, 0) + coalesce(kueue_pending.pending_gpus, 0)
            as integer
        ) as pending_gpus_at_day_end,
        cast(coalesce(kueue_pending.workloads_pending, 0) as integer)
            as kueue_workloads_pending_at_day_end,
        cast(coalesce(kueue_pending.pending_gpus, 0) as integer)
            as kueue_pending_gpus_at_day_end,
        cast(coalesce(kueue_admitted.workloads_admitted, 0) as integer)
            as kueue_workloads_admitted,
        kueue_admitted.admission_wait_p50_seconds as kueue_admission_wait_p50_seconds,
        kueue_admitted.admission_wait_p95_seconds as kueue_admission_wait_p95_seconds,
        cast(coalesce(kueue_events.evictions, 0) as integer) as kueue_evictions,
        cast(coalesce(kueue_events.requeues, 0) as integer) as kueue_requeues,
        cast(coalesce(outages_started.outages_started, 0) as integer) as outages_started,
        cast(coalesce(outages.outages_ended, 0) as integer) as outages_ended,
        outages.mttr_seconds,
        days.day_epoch
    from days
    left join ended
        on ended.day_epoch = days.day_epoch
    left join started
        on started.day_epoch = days.day_epoch
    left join pending
        on pending.day_epoch = days.day_epoch
    left join kueue_pending
        on kueue_pending.day_epoch = days.day_epoch
    left join kueue_admitted
        on kueue_admitted.day_epoch = days.day_epoch
    left join kueue_events
        on kueue_events.day_epoch = days.day_epoch
    left join outages
        on outages.day_epoch = days.day_epoch
    left join outages_started
        on outages_started.day_epoch = days.day_epoch

)

select * from final
