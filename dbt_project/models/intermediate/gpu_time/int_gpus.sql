-- Every physical GPU of every inventory node: each UUID DCGM reported in a slot, or
-- `<host>:gpu<index>` for a slot that never reported. A slot can hold several GPUs over time (a
-- board replaced, an RMA: a new UUID at the same host and index): each UUID belongs to the slot
-- it first reported in, and holds it from its first reported hour (the slot's first UUID: from
-- the start) until the first reported hour of the next UUID placed in that slot (`tenure_from`
-- / `tenure_to`, epoch seconds; null: open), so every slot has exactly one GPU in every hour.
with

inventory as (

    select * from {{ ref('stg_config__inventory') }}

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
    -- config allows up to 64 GPUs a node (fleetledger/config.py, Node.gpus)
    inner join ({{ integers(64) }}) as slot
        on slot.n < inventory.gpus

),

slot_reports as (

    -- each UUID's first reported hour in each inventory slot it reported in: a group-by over
    -- every stored hour report (they grow with GPUs x hours), the window below over its few rows
    select
        reports.gpu_uuid,
        reports.host,
        reports.gpu_index,
        min(reports.hour_epoch) as first_hour
    from {{ ref('int_gpu_hour_reports') }} as reports
    inner join slots
        on slots.host = reports.host and slots.gpu_index = reports.gpu_index
    group by reports.gpu_uuid, reports.host, reports.gpu_index

),

first_reports as (

    -- each UUID's first reported hour in an inventory slot, and that slot (several at once:
    -- the first by host and index)
    select gpu_uuid, host, gpu_index, first_hour
    from (
        select
            slot_reports.*,
            row_number() over (
                partition by slot_reports.gpu_uuid
                order by slot_reports.first_hour, slot_reports.host, slot_reports.gpu_index
            ) as nth_slot
        from slot_reports
    ) as ranked
    where nth_slot = 1

),

seen as (

    -- the UUIDs of each slot in the order they arrived; each holds the slot until the next
    select
        gpu_uuid,
        host,
        gpu_index,
        case
            when row_number() over (
                partition by host, gpu_index order by first_hour, gpu_uuid
            ) > 1 then first_hour
        end as tenure_from,
        lead(first_hour) over (
            partition by host, gpu_index order by first_hour, gpu_uuid
        ) as tenure_to
    from first_reports

),

final as (

    select
        coalesce(seen.gpu_uuid, slots.host || ':gpu' || cast(slots.gpu_index as string)) as gpu_uuid,
        slots.*,
        seen.gpu_uuid is not null as reported,
        seen.tenure_from,
        seen.tenure_to
    from slots
    left join seen
        on seen.host = slots.host and seen.gpu_index = slots.gpu_index

)

select * from final
