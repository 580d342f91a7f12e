with

source as (

    select * from {{ landing('config_settings') }}

),

renamed as (

    select * from source

)

select * from renamed
