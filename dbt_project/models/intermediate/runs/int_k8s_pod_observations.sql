-- What each Kubernetes snapshot said about each pod, one row per pod per snapshot: a pod dump
-- (`kubectl get pods -o json`), or, for a cluster that no pod dump covers, a kube-state-metrics
-- scrape time (the pod's GPU requests with its phase, times and reason at that time). A
-- snapshot is one `snapshot_at` of one source and cluster (`x_source`, `cluster`): the pods it
-- shows are the pods that existed then, so a pod a later snapshot lacks was gone by then
-- (int_runs__kubernetes).
with

pods as (

    select * from {{ ref('stg_kubernetes__pods') }}

),

ksm as (

    select * from {{ ref('stg_kubernetes__gpu_requests') }}

),

dump_clusters as (

    select distinct coalesce(cluster, '') as cluster_key from pods

),

from_dumps as (

    select
        x_source,
        x_source_file,
        'pods' as observed_by,
        cluster,
        pod_uid,
        pod_name,
        namespace,
        host,
        phase,
        created_at,
        started_at,
        finished_at,
        gpus,
        mig_slices,
        labels,
        exit_code,
        reason,
        owner_kind,
        owner_name,
        owner_uid,
        snapshot_at
    from pods

),

from_ksm as (

    select
        ksm.x_source,
        ksm.x_source_file,
        'kube_state_metrics' as observed_by,
        ksm.cluster,
        -- a scrape without uid labels keys the pod by namespace/name
        coalesce(ksm.pod_uid, ksm.k8s_namespace || '/' || ksm.pod_name) as pod_uid,
        ksm.pod_name,
        ksm.k8s_namespace as namespace,
        ksm.host,
        ksm.phase,
        ksm.created_at,
        ksm.started_at,
        ksm.finished_at,
        ksm.gpus,
        0 as mig_slices,
        '{}' as labels,
        cast(null as integer) as exit_code,
        ksm.reason,
        ksm.owner_kind,
        ksm.owner_name,
        cast(null as string) as owner_uid,
        ksm.sampled_at as snapshot_at
    from ksm
    where
        ksm.resource = 'nvidia.com/gpu'
        and coalesce(ksm.cluster, '') not in (select cluster_key from dump_clusters)

),

final as (

    select * from from_dumps
    union all
    select * from from_ksm

)

select * from final
