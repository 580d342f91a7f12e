-- The data-health findings of earlier runs (fleetledger/data_health.py appends each published
-- run's findings under raw/data_health_log/pipeline/).
with

source as (

    select * from {{ landing('data_health_log') }}

),

renamed as (

    select
        run_at,
        run_id,
        source,
        cast(day as date) as day,
        check_name,
        severity,
        cast(count as bigint) as count,
        message

    from source

)

select * from renamed
