-- GPU energy (from DCGM power, integrated over sample coverage) per node and hour.
with

telemetry as (

    select * from {{ ref('int_gpu_hour_telemetry') }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

final as (

    select
        gpus.host,
        telemetry.hour_epoch,
        sum(telemetry.energy_wh) as gpu_energy_wh
    from telemetry
    inner join gpus
        on gpus.gpu_uuid = telemetry.gpu_uuid
    group by gpus.host, telemetry.hour_epoch

)

select * from final
