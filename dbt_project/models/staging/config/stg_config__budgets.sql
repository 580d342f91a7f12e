with

source as (

    select * from {{ landing('config_budgets') }}

),

renamed as (

    select * from source

)

select * from renamed
