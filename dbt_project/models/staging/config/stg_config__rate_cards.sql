with

source as (

    select * from {{ landing('config_rate_cards') }}

),

renamed as (

    select * from source

)

select * from renamed
