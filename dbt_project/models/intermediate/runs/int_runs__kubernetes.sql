-- Kubernetes pods holding GPUs, one row per pod uid (names are reused), from the latest
-- snapshot that shows it (int_k8s_pod_observations: pod dumps, else kube-state-metrics).
-- What never changes in a pod's life (created, started, node) falls back on any snapshot that
-- knows it, so a later snapshot that lacks a field never erases what earlier ones said.
--
-- When a pod ended (docs/metrics.md, fct_runs `ended_at`):
-- - its containers' finish time when the snapshots report one;
-- - else, a pod a snapshot shows `Succeeded` or `Failed` ended by the first such snapshot;
-- - else, a pod missing from a later snapshot of its source and cluster (deleted: a rolling
--   update, a Job's TTL, a preemption) ended by the first snapshot that lacks it (state
--   `Deleted`); a pod quarantined from a snapshot (the reader names its uid) was not missing;
-- - a deleted pod's end is moved back to the start of a pod on its node that started after the
--   deleted pod was last seen and that the node's GPUs (inventory `gpus`) could not hold beside
--   it: the scheduler gave its GPUs away then, never before the last snapshot that showed it.
-- Pods of a Kueue workload were submitted when their workload was (the queue wait includes the
-- wait for admission: int_kueue_workload_runs).
with

observations as (

    select * from {{ ref('int_k8s_pod_observations') }}

),

quarantine as (

    select * from {{ ref('stg_quarantine__rows') }}

),

inventory as (

    select * from {{ ref('stg_config__inventory') }}

),

-- every snapshot of each source and cluster, and the files it came from
snapshots as (

    select distinct x_source, x_source_file, cluster, snapshot_at from observations

),

-- each snapshot of a source and cluster with the next one (an equality join below, not a
-- range join: kube-state-metrics gives thousands of snapshots a day)
snapshot_stream as (

    select
        x_source,
        cluster_key,
        snapshot_at,
        lead(snapshot_at) over (
            partition by x_source, cluster_key order by snapshot_at
        ) as next_snapshot_at
    from (
        select distinct x_source, coalesce(cluster, '') as cluster_key, snapshot_at
        from observations
    ) as distinct_snapshots

),

-- pods a snapshot quarantined were in it: the pod reader names the uid in the reason
quarantined as (

    select
        snapshots.x_source,
        snapshots.cluster,
        snapshots.snapshot_at,
        {{ regex_extract('quarantine.reason', "'\\(uid ([^)]+)\\)'") }} as pod_uid
    from quarantine
    inner join snapshots
        on snapshots.x_source = quarantine.x_source
        and snapshots.x_source_file = quarantine.x_source_file

),

sightings as (

    select x_source, cluster, snapshot_at, pod_uid from observations
    union all
    select x_source, cluster, snapshot_at, pod_uid from quarantined
    where pod_uid is not null

),

last_sightings as (

    select
        x_source,
        coalesce(cluster, '') as cluster_key,
        pod_uid,
        max(snapshot_at) as last_seen_at
    from sightings
    group by x_source, coalesce(cluster, ''), pod_uid

),

latest as (

    select
        observations.*,
        row_number() over (
            partition by cluster, pod_uid order by snapshot_at desc
        ) as rn,
        min(created_at) over (partition by cluster, pod_uid) as known_created_at,
        min(started_at) over (partition by cluster, pod_uid) as known_started_at,
        max(finished_at) over (partition by cluster, pod_uid) as known_finished_at,
        min(case when phase in ('Succeeded', 'Failed') then snapshot_at end)
            over (partition by cluster, pod_uid) as first_terminal_at,
        max(host) over (partition by cluster, pod_uid) as known_host
    from observations
    where gpus > 0 or mig_slices > 0

),

-- the first snapshot of the pod's source and cluster after the last one that showed it
gone as (

    select
        latest.cluster,
        latest.pod_uid,
        snapshot_stream.next_snapshot_at as gone_at
    from latest
    inner join last_sightings
        on last_sightings.x_source = latest.x_source
        and last_sightings.cluster_key = coalesce(latest.cluster, '')
        and last_sightings.pod_uid = latest.pod_uid
    inner join snapshot_stream
        on snapshot_stream.x_source = latest.x_source
        and snapshot_stream.cluster_key = coalesce(latest.cluster, '')
        and snapshot_stream.snapshot_at = last_sightings.last_seen_at
    where latest.rn = 1 and snapshot_stream.next_snapshot_at is not null

),

pods as (

    select
        latest.cluster,
        latest.pod_uid,
        latest.pod_name,
        latest.namespace,
        latest.labels,
        latest.exit_code,
        latest.reason,
        latest.snapshot_at as last_seen_at,
        coalesce(latest.host, latest.known_host) as host,
        coalesce(latest.created_at, latest.known_created_at) as created_at,
        coalesce(latest.started_at, latest.known_started_at) as started_at,
        latest.gpus,
        latest.mig_slices,
        latest.gpus + cast(latest.mig_slices as double) / 7 as gpu_equivalents,
        coalesce(latest.finished_at, latest.known_finished_at, latest.first_terminal_at)
            as finished_at,
        gone.gone_at,
        case
            when
                coalesce(latest.finished_at, latest.known_finished_at, latest.first_terminal_at)
                is null
                and gone.gone_at is not null
                then 'Deleted'
            else latest.phase
        end as state
    from latest
    left join gone
        on coalesce(gone.cluster, '') = coalesce(latest.cluster, '')
        and gone.pod_uid = latest.pod_uid
    where latest.rn = 1

),

provisional as (

    select
        pods.*,
        coalesce(pods.finished_at, pods.gone_at) as provisional_end
    from pods

),

-- starts of pods on a node whose GPUs (inventory) the pods alive then (deleted ones counted
-- to their provisional end) exceed
overcommitted_starts as (

    select
        starting.cluster,
        starting.host,
        starting.started_at
    from provisional as starting
    inner join provisional as alive
        on coalesce(alive.cluster, '') = coalesce(starting.cluster, '')
        and alive.host = starting.host
        and alive.started_at <= starting.started_at
        and (alive.provisional_end is null or alive.provisional_end > starting.started_at)
    inner join inventory
        on inventory.host = starting.host
    where starting.started_at is not null
    group by starting.cluster, starting.host, starting.started_at, starting.pod_uid, inventory.gpus
    having sum(alive.gpu_equivalents) > max(inventory.gpus)

),

displaced as (

    select
        deleted.cluster,
        deleted.pod_uid,
        min(overcommitted_starts.started_at) as displaced_at
    from provisional as deleted
    inner join overcommitted_starts
        on coalesce(overcommitted_starts.cluster, '') = coalesce(deleted.cluster, '')
        and overcommitted_starts.host = deleted.host
        and overcommitted_starts.started_at > deleted.last_seen_at
        and overcommitted_starts.started_at < deleted.provisional_end
    where deleted.state = 'Deleted' and deleted.started_at is not null
    group by deleted.cluster, deleted.pod_uid

),

kueue as (

    select * from {{ ref('int_kueue_pod_workloads') }}

),

final as (

    select
        'kubernetes' as scheduler,
        provisional.cluster,
        provisional.pod_uid as job_id,
        provisional.pod_uid as job_id_raw,
        1 as attempt,
        {{ json_text('provisional.labels', "'user'") }} as user_name,
        provisional.namespace as account,
        provisional.namespace as k8s_namespace,
        provisional.pod_name,
        provisional.labels,
        coalesce(kueue.queue_name, provisional.namespace) as queue,
        provisional.pod_name as job_name,
        provisional.state,
        provisional.exit_code,
        provisional.reason,
        coalesce(kueue.workload_created_at, provisional.created_at) as submitted_at,
        coalesce(kueue.workload_created_at, provisional.created_at) as eligible_at,
        provisional.started_at,
        case
            when displaced.displaced_at is not null
                then displaced.displaced_at
            else provisional.provisional_end
        end as ended_at,
        provisional.gpus,
        provisional.mig_slices,
        cast(null as string) as mig_profile,
        1 as node_count,
        {{ make_list('provisional.host') }} as hosts,
        {{ null_int_list() }} as gpu_indices
    from provisional
    left join displaced
        on coalesce(displaced.cluster, '') = coalesce(provisional.cluster, '')
        and displaced.pod_uid = provisional.pod_uid
    left join kueue
        on coalesce(kueue.cluster, '') = coalesce(provisional.cluster, '')
        and kueue.pod_uid = provisional.pod_uid

)

select * from final
