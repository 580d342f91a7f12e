with

source as (

    select * from {{ source('landing', 'config_budgets') }}

),

renamed as (

    select * from source

)

select * from renamed
