with

source as (

    select * from {{ source('landing', 'config_teams') }}

),

renamed as (

    select * from source

)

select * from renamed
