with

source as (

    select * from {{ source('landing', 'config_currency_rates') }}

),

renamed as (

    select * from source

)

select * from renamed
