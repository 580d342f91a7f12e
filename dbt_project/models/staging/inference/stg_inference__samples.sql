with

source as (

    select * from {{ landing('inference_samples') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        time as sampled_at,
        host,
        namespace as k8s_namespace,
        pod as k8s_pod,
        container as k8s_container,
        model_name,
        metric,
        le,
        cast(le as double) as le_bound,
        finished_reason,
        cast(value as double) as value,
        labels

    from source

)

select * from renamed
