with

source as (

    select * from {{ source('landing', 'dcgm_samples') }}

),

renamed as (

    select
        x_source,
        time as sampled_at,
        host,
        cast(gpu as integer) as gpu_index,
        uuid as gpu_uuid,
        mig_instance,
        mig_profile,
        metric,
        cast(value as double) as value,
        model_name,
        hpc_job,
        namespace as k8s_namespace,
        pod as k8s_pod

    from source

)

select * from renamed
