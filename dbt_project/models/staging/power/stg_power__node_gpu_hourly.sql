-- Hourly per-node GPU rollups as a monitoring database exports them (power in W, temperatures
-- in °C, utilisation and GPU memory as exported: 0–100).
with

source as (

    select * from {{ landing('node_gpu_power_hourly') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        time as hour_start,
        host,
        cast(interval_seconds as integer) as interval_seconds,
        cast(power_avg_w as double) as power_avg_w,
        cast(power_min_w as double) as power_min_w,
        cast(power_max_w as double) as power_max_w,
        cast(temp_avg_c as double) as temp_avg_c,
        cast(temp_min_c as double) as temp_min_c,
        cast(temp_max_c as double) as temp_max_c,
        cast(util_avg as double) as util_avg,
        cast(util_min as double) as util_min,
        cast(util_max as double) as util_max,
        cast(gmem_avg as double) as gmem_avg,
        cast(gmem_min as double) as gmem_min,
        cast(gmem_max as double) as gmem_max

    from source

)

select * from renamed
