with

source as (

    select * from {{ source('landing', 'config_settings') }}

),

renamed as (

    select * from source

)

select * from renamed
