with

source as (

    select * from {{ source('landing', 'config_team_rules') }}

),

renamed as (

    select * from source

)

select * from renamed
