with

source as (

    select * from {{ landing('kueue_workloads') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        cluster,
        uid as workload_uid,
        name as workload_name,
        namespace as k8s_namespace,
        queue_name,
        cluster_queue,
        cast(priority as integer) as priority,
        priority_class,
        owner_kind,
        owner_name,
        owner_uid,
        created_at,
        quota_reserved_at,
        admitted_at,
        pods_ready_at,
        finished_at,
        finished_reason,
        cast(evicted_count as integer) as evicted_count,
        evicted_reason,
        evicted_at,
        cast(requeue_count as integer) as requeue_count,
        requeue_at,
        cast(past_admitted_seconds as bigint) as past_admitted_seconds,
        -- JSON array text: name, count, min_count, gpus_per_pod, gpus, admitted_count, flavors
        pod_sets,
        cast(pod_count as integer) as pod_count,
        cast(gpus_requested as integer) as gpus_requested,
        cast(gpus_admitted as integer) as gpus_admitted,
        flavors,
        labels,
        snapshot_at

    from source

)

select * from renamed
