-- GPU energy (from DCGM power, integrated over sample coverage) per node and hour: each GPU's
-- energy counts to the node of its inventory slot (int_gpus).
-- Stored by day (macros/incremental.sql): a run rewrites the days int_gpu_units recomputed (from
-- the first day of its range; every day when the GPUs, and so a GPU's node, changed), which
-- hold every day of the range whose telemetry it recomputed.
-- (the first hour: {{ ref('int_gpu_units_recompute_from') }})
{{ incremental_by_day(to_last_day='int_gpu_units_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_gpu_units_recompute_from') %}
with

telemetry as (

    select * from {{ ref('int_gpu_hour_telemetry') }}
    where hour_epoch >= {{ from_hour }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

final as (

    select
        gpus.host,
        telemetry.hour_epoch,
        sum(telemetry.energy_wh) as gpu_energy_wh,
        telemetry.day_epoch
    from telemetry
    inner join gpus
        on gpus.gpu_uuid = telemetry.gpu_uuid
    group by gpus.host, telemetry.hour_epoch, telemetry.day_epoch

)

select * from final
