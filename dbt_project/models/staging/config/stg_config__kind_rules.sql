with

source as (

    select * from {{ source('landing', 'config_kind_rules') }}

),

renamed as (

    select * from source

)

select * from renamed
