with

source as (

    select * from {{ source('landing', 'config_rate_cards') }}

),

renamed as (

    select * from source

)

select * from renamed
