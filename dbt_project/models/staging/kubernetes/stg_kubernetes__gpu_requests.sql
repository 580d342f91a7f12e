with

source as (

    select * from {{ landing('k8s_gpu_requests') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        time as sampled_at,
        cluster,
        namespace as k8s_namespace,
        pod as pod_name,
        uid as pod_uid,
        node as host,
        resource,
        cast(containers as integer) as container_count,
        cast(gpus as integer) as gpus,
        phase,
        created_at,
        started_at,
        finished_at,
        reason,
        owner_kind,
        owner_name

    from source

)

select * from renamed
