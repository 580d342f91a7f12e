with

source as (

    select * from {{ source('landing', 'config_inventory') }}

),

renamed as (

    select * from source

)

select * from renamed
