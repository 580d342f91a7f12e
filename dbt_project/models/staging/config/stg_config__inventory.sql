with

source as (

    select * from {{ landing('config_inventory') }}

),

renamed as (

    select * from source

)

select * from renamed
