with

source as (

    select * from {{ landing('config_team_rules') }}

),

renamed as (

    select * from source

)

select * from renamed
