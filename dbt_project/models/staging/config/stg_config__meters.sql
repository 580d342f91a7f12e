-- Which power meters are a site's IT total, and which meter feeds which (config `sites:`
-- `it_meters` / `meter_parents`).
with

source as (

    select * from {{ landing('config_meters') }}

),

renamed as (

    select
        site,
        meter,
        parent_meter,
        coalesce(it_total, false) as is_it_total

    from source

)

select * from renamed
