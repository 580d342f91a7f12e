-- Health signals per node and UTC day from int_health_gpu_samples (docs/metrics.md,
-- fct_fleet_health_daily): clock-throttle GPU-seconds by reason, ECC errors, remapped rows and
-- row-remap failure.
--   throttle: each sample covers [t, valid_to); the part after midnight counts in the next day
--     (stale_after is far below a day, so a sample reaches one day further at most). One column
--     per reason of var `throttle_reasons` (name: bit), `throttle_gpu_seconds` for any of them,
--     `thermal_` (SW | HW thermal) and `power_` (SW power cap | HW power brake); 0x1 idle,
--     0x2 app clocks, 0x10 sync boost and 0x100 display are not throttling.
--   counters and the failure gauge: on the day of the sample that shows them.
-- A column is null where no GPU of the node reports its field that day.
-- One row per node and accounted day (int_days): the coverage of a day's last samples past
-- the last accounted midnight counts in a day not accounted yet, which the run for that day
-- writes. Stored by day: a run rewrites the days int_health_gpu_samples rewrites (its range
-- and the day before it) from their samples and those of the day before them (what covers
-- past midnight; macros/incremental.sql).
{%- set reasons = var('throttle_reasons') %}
{%- set any_bits = reasons.values() | sum %}
{%- set thermal_bits = reasons['sw_thermal'] + reasons['hw_thermal'] %}
{%- set power_bits = reasons['sw_power_cap'] + reasons['hw_power_brake'] %}
{{ incremental_by_day(days_before=1) }}
with

samples as (

    select * from {{ ref('int_health_gpu_samples') }}
    where {{ in_recomputed_days('day_epoch', days_before=2) }}

),

coverage as (

    select
        host,
        day_epoch,
        throttle_reasons,
        least(valid_to, day_epoch + 86400) - t as seconds
    from samples
    union all
    select
        host,
        day_epoch + 86400 as day_epoch,
        throttle_reasons,
        valid_to - (day_epoch + 86400) as seconds
    from samples
    where valid_to > day_epoch + 86400

),

throttle as (

    select
        host,
        day_epoch,
        sum(case
            when throttle_reasons is null then null
            when {{ bitand('throttle_reasons', any_bits) }} <> 0 then seconds
            else 0
        end) as throttle_gpu_seconds,
        {%- for name, bit in reasons.items() %}
        sum(case
            when throttle_reasons is null then null
            when {{ bitand('throttle_reasons', bit) }} <> 0 then seconds
            else 0
        end) as throttle_{{ name }}_gpu_seconds,
        {%- endfor %}
        sum(case
            when throttle_reasons is null then null
            when {{ bitand('throttle_reasons', thermal_bits) }} <> 0 then seconds
            else 0
        end) as thermal_throttle_gpu_seconds,
        sum(case
            when throttle_reasons is null then null
            when {{ bitand('throttle_reasons', power_bits) }} <> 0 then seconds
            else 0
        end) as power_throttle_gpu_seconds
    from coverage
    group by host, day_epoch

),

counters as (

    select
        host,
        day_epoch,
        sum(ecc_sbe_errors) as ecc_sbe_errors,
        sum(ecc_dbe_errors) as ecc_dbe_errors,
        sum(correctable_remapped_rows) as correctable_remapped_rows,
        sum(uncorrectable_remapped_rows) as uncorrectable_remapped_rows,
        max(row_remap_failure) > 0 as row_remap_failure,
        -- exact only where every GPU of the node exports DCGM_EXP_XID_ERRORS_COUNT
        count(distinct case when exports_xid_count then gpu_uuid end)
            < count(distinct gpu_uuid) as xid_count_is_lower_bound
    from samples
    group by host, day_epoch

),

final as (

    select
        throttle.host,
        throttle.day_epoch,
        throttle.throttle_gpu_seconds,
        {%- for name in reasons %}
        throttle.throttle_{{ name }}_gpu_seconds,
        {%- endfor %}
        throttle.thermal_throttle_gpu_seconds,
        throttle.power_throttle_gpu_seconds,
        counters.ecc_sbe_errors,
        counters.ecc_dbe_errors,
        counters.correctable_remapped_rows,
        counters.uncorrectable_remapped_rows,
        counters.row_remap_failure,
        counters.xid_count_is_lower_bound
    from throttle
    inner join {{ ref('int_days') }} as days
        on days.day_epoch = throttle.day_epoch
    left join counters
        on counters.host = throttle.host and counters.day_epoch = throttle.day_epoch
    where {{ in_recomputed_days('throttle.day_epoch', days_before=1) }}

)

select * from final
