with

inventory as (

    select * from {{ ref('stg_config__inventory') }}

),

rate_cards as (

    select distinct host from {{ ref('stg_config__rate_cards') }}

),

final as (

    select
        inventory.host,
        inventory.provider,
        inventory.site,
        inventory.instance_type,
        inventory.resource_id,
        inventory.cluster,
        inventory.gpus as gpus_per_node,
        inventory.gpu_model,
        case when rate_cards.host is not null then 'rate_card' else 'bill' end as cost_source
    from inventory
    left join rate_cards
        on rate_cards.host = inventory.host

)

select * from final
