with

source as (

    select * from {{ landing('power_readings') }}

),

renamed as (

    select
        x_source,
        time as read_at,
        site,
        meter,
        kind as meter_kind,
        cast(kw as double) as kw

    from source

)

select * from renamed
