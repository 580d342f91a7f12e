-- The Kueue workload of each Kubernetes pod, one row per pod (cluster, pod_uid) that belongs to
-- one. A pod belongs to a workload of its cluster and namespace when the workload's owner is
-- the pod itself (a plain pod), or the pod's controller (its Job, by uid; by kind and name when
-- the snapshot has no owner uid, as kube-state-metrics), or, for JobSets and Kubeflow training
-- jobs, the job its `jobset.sigs.k8s.io/jobset-name` / `training.kubeflow.org/job-name` label
-- names. The latest-created workload wins.
with

observations as (

    select * from {{ ref('int_k8s_pod_observations') }}

),

pods as (

    select
        cluster,
        pod_uid,
        namespace,
        owner_kind,
        owner_name,
        owner_uid,
        labels,
        row_number() over (partition by cluster, pod_uid order by snapshot_at desc) as rn
    from observations
    where gpus > 0 or mig_slices > 0

),

workloads as (

    select * from {{ ref('int_kueue_workloads') }}

),

matches as (

    select
        pods.cluster,
        pods.pod_uid,
        workloads.workload_uid,
        workloads.workload_name,
        workloads.queue_name,
        workloads.cluster_queue,
        workloads.created_at as workload_created_at,
        workloads.first_admitted_at,
        workloads.admission_wait_seconds,
        workloads.evictions,
        workloads.requeues,
        workloads.evicted_reason,
        workloads.evicted_at,
        row_number() over (
            partition by pods.cluster, pods.pod_uid
            order by workloads.created_at desc, workloads.workload_uid
        ) as rn
    from pods
    inner join workloads
        on coalesce(workloads.cluster, '') = coalesce(pods.cluster, '')
        and workloads.k8s_namespace = pods.namespace
        and (
            workloads.owner_uid = pods.pod_uid
            or workloads.owner_uid = pods.owner_uid
            or (
                pods.owner_uid is null
                and workloads.owner_kind = pods.owner_kind
                and workloads.owner_name = pods.owner_name
            )
            or (
                workloads.owner_kind = 'JobSet'
                and {{ json_text('pods.labels', "'jobset.sigs.k8s.io/jobset-name'") }}
                = workloads.owner_name
            )
            or (
                workloads.owner_kind in ('PyTorchJob', 'TFJob', 'MPIJob', 'XGBoostJob', 'PaddleJob', 'JAXJob')
                and {{ json_text('pods.labels', "'training.kubeflow.org/job-name'") }}
                = workloads.owner_name
            )
        )
    where pods.rn = 1

),

final as (

    select
        cluster,
        pod_uid,
        workload_uid,
        workload_name,
        queue_name,
        cluster_queue,
        workload_created_at,
        first_admitted_at,
        admission_wait_seconds,
        evictions,
        requeues,
        evicted_reason,
        evicted_at
    from matches
    where rn = 1

)

select * from final
