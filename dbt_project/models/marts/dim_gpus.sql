with

gpus as (

    select * from {{ ref('int_gpus') }}

),

final as (

    select
        gpu_uuid,
        host,
        gpu_index,
        gpu_model,
        provider,
        site,
        instance_type,
        resource_id,
        reported
    from gpus

)

select * from final
