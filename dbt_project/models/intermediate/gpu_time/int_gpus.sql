-- Every physical GPU of every inventory node: the uuid DCGM reports for it, or
-- `<host>:gpu<index>` for a slot that never reported.
with

inventory as (

    select * from {{ ref('stg_config__inventory') }}

),

seen as (

    select
        host,
        gpu_index,
        min(gpu_uuid) as gpu_uuid
    from {{ ref('int_gpu_hour_reports') }}
    group by host, gpu_index

),

slots as (

    select
        inventory.host,
        slot.n as gpu_index,
        inventory.provider,
        inventory.site,
        inventory.instance_type,
        inventory.resource_id,
        inventory.gpu_model,
        inventory.gpus as gpus_per_node
    from inventory
    inner join ({{ integers(16) }}) as slot
        on slot.n < inventory.gpus

),

final as (

    select
        coalesce(seen.gpu_uuid, slots.host || ':gpu' || cast(slots.gpu_index as string)) as gpu_uuid,
        slots.*,
        seen.gpu_uuid is not null as reported
    from slots
    left join seen
        on seen.host = slots.host and seen.gpu_index = slots.gpu_index

)

select * from final
