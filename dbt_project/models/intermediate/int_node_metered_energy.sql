-- IT energy of nodes that have their own meter (a power reading of kind `it` whose `meter` is the
-- node's host name, e.g. a PDU outlet group), per node and hour. Each reading covers the time
-- until the meter's next reading, at most 5 minutes, clipped to the hour.
with

readings as (

    select
        readings.meter as host,
        readings.kw,
        {{ to_epoch('readings.read_at') }} as t
    from {{ ref('stg_power__readings') }} as readings
    inner join {{ ref('stg_config__inventory') }} as inventory
        on inventory.host = readings.meter
    where readings.meter_kind = 'it'

),

covered as (

    select
        host,
        kw,
        t,
        least(coalesce(lead(t) over (partition by host order by t), t + 300), t + 300) as t_end
    from readings

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

spread as (

    select
        covered.host,
        covered.kw,
        floor(covered.t / 3600) * 3600 + offsets.n * 3600 as hour_epoch,
        covered.t,
        covered.t_end
    from covered
    inner join offsets
        on offsets.n <= floor((covered.t_end - 0.000001) / 3600) - floor(covered.t / 3600)

),

final as (

    select
        host,
        hour_epoch,
        sum(kw * (least(t_end, hour_epoch + 3600) - greatest(t, hour_epoch))) / 3600.0 as it_kwh
    from spread
    group by host, hour_epoch

)

select * from final
