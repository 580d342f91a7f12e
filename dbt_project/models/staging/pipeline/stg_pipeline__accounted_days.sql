-- The days `fleetledger run` was asked for (fleetledger/config_tables.py writes one partition
-- per day under raw/accounted_days/pipeline/).
with

source as (

    select * from {{ landing('accounted_days') }}

),

renamed as (

    select
        cast(day as date) as day,
        recorded_at

    from source

)

select * from renamed
