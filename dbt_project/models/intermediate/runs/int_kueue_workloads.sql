-- Kueue workloads, one row per workload uid and cluster, from every dump that shows it: the
-- queue and admission of its latest dump, its first admission (the end of its first wait in
-- the queue), its evictions and requeues so far (the largest counts any dump shows), and when
-- it left: its Finished condition, else the first later dump of its source and cluster that
-- lacks it (a deleted workload).
with

workloads as (

    select * from {{ ref('stg_kueue__workloads') }}

),

-- each dump of a source and cluster with the next one
dumps as (

    select
        x_source,
        cluster_key,
        snapshot_at,
        lead(snapshot_at) over (
            partition by x_source, cluster_key order by snapshot_at
        ) as next_snapshot_at
    from (
        select distinct x_source, coalesce(cluster, '') as cluster_key, snapshot_at
        from workloads
    ) as distinct_dumps

),

latest as (

    select
        workloads.*,
        row_number() over (
            partition by cluster, workload_uid order by snapshot_at desc
        ) as rn,
        min(created_at) over (partition by cluster, workload_uid) as known_created_at,
        min(admitted_at) over (partition by cluster, workload_uid) as first_admitted_at,
        max(finished_at) over (partition by cluster, workload_uid) as known_finished_at,
        max(evicted_count) over (partition by cluster, workload_uid) as evictions,
        max(requeue_count) over (partition by cluster, workload_uid) as requeues,
        max(evicted_at) over (partition by cluster, workload_uid) as last_evicted_at,
        max(snapshot_at) over (partition by cluster, workload_uid) as last_seen_at
    from workloads

),

gone as (

    select
        latest.cluster,
        latest.workload_uid,
        dumps.next_snapshot_at as gone_at
    from latest
    inner join dumps
        on dumps.x_source = latest.x_source
        and dumps.cluster_key = coalesce(latest.cluster, '')
        and dumps.snapshot_at = latest.last_seen_at
    where latest.rn = 1 and dumps.next_snapshot_at is not null

),

final as (

    select
        latest.cluster,
        latest.workload_uid,
        latest.workload_name,
        latest.k8s_namespace,
        latest.queue_name,
        latest.cluster_queue,
        latest.owner_kind,
        latest.owner_name,
        latest.owner_uid,
        latest.gpus_requested,
        latest.pod_count,
        coalesce(latest.created_at, latest.known_created_at) as created_at,
        latest.first_admitted_at,
        {{ to_epoch('latest.first_admitted_at') }}
            - {{ to_epoch('coalesce(latest.created_at, latest.known_created_at)') }}
            as admission_wait_seconds,
        latest.known_finished_at as finished_at,
        latest.finished_reason,
        gone.gone_at,
        coalesce(latest.evictions, 0) as evictions,
        coalesce(latest.requeues, 0) as requeues,
        latest.evicted_reason,
        latest.last_evicted_at as evicted_at,
        latest.last_seen_at
    from latest
    left join gone
        on coalesce(gone.cluster, '') = coalesce(latest.cluster, '')
        and gone.workload_uid = latest.workload_uid
    where latest.rn = 1

)

select * from final
