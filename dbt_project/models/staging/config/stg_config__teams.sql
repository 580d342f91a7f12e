with

source as (

    select * from {{ landing('config_teams') }}

),

renamed as (

    select * from source

)

select * from renamed
