-- Cost of each inventory node in each accounted hour: its bill lines' effective cost, each
-- prorated by its overlap with the hour (hourly, daily or monthly lines alike).
with

lines as (

    select
        x_host as host,
        x_provider as provider,
        x_effective_cost_reporting as effective_cost,
        x_list_cost_reporting as list_cost,
        x_energy_kwh,
        x_energy_cost,
        {{ to_epoch('charge_period_start') }} as cs,
        {{ to_epoch('charge_period_end') }} as ce
    from {{ ref('int_billing_lines') }}
    where x_host is not null

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

hours as (

    select * from {{ ref('int_hours') }}

),

spread as (

    select
        lines.*,
        floor(lines.cs / 3600) * 3600 + offsets.n * 3600 as hour_epoch
    from lines
    inner join offsets
        on offsets.n <= floor((lines.ce - 0.000001) / 3600) - floor(lines.cs / 3600)

),

prorated as (

    select
        spread.host,
        spread.provider,
        spread.hour_epoch,
        (least(spread.ce, spread.hour_epoch + 3600) - greatest(spread.cs, spread.hour_epoch))
            / nullif(spread.ce - spread.cs, 0) as fraction,
        spread.effective_cost,
        spread.list_cost,
        spread.x_energy_kwh,
        spread.x_energy_cost
    from spread
    inner join hours
        on hours.hour_epoch = spread.hour_epoch

),

final as (

    select
        host,
        provider,
        hour_epoch,
        sum(effective_cost * fraction) as cost,
        sum(list_cost * fraction) as list_cost,
        sum(x_energy_cost * fraction) as energy_cost,
        sum(x_energy_kwh * fraction) as energy_kwh
    from prorated
    group by host, provider, hour_epoch

)

select * from final
