with

source as (

    select * from {{ landing('k8s_pods') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        cluster,
        uid as pod_uid,
        name as pod_name,
        namespace,
        node as host,
        phase,
        created_at as created_at,
        started_at as started_at,
        finished_at as finished_at,
        cast(gpus as integer) as gpus,
        cast(coalesce(mig_slices, 0) as integer) as mig_slices,
        labels,
        cast(exit_code as integer) as exit_code,
        reason,
        snapshot_at as snapshot_at,
        owner_kind,
        owner_name,
        owner_uid

    from source

)

select * from renamed
