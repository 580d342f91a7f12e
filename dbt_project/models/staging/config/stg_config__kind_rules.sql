with

source as (

    select * from {{ landing('config_kind_rules') }}

),

renamed as (

    select * from source

)

select * from renamed
