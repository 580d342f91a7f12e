with

source as (

    select * from {{ landing('config_currency_rates') }}

),

renamed as (

    select * from source

)

select * from renamed
