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
        reported,
        -- the GPU's time in its slot (a replaced board: until its successor's first report);
        -- null: from the start of the data / still in the slot
        {{ from_epoch('tenure_from') }} as in_service_from,
        {{ from_epoch('tenure_to') }} as in_service_to
    from gpus

)

select * from final
