-- Inference unit economics per run, served model and UTC day (docs/metrics.md, "Inference
-- unit economics"): int_inference_run_days with the ratios of the inference_unit_costs macro.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the
-- days from the first hour int_inference_recompute_from chose on (the GPU-hour states' first
-- day, or the start of an inference run that changed).
-- (the first hour: {{ ref('int_inference_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_inference_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_inference_recompute_from') %}
with

run_days as (

    select * from {{ ref('int_inference_run_days') }}
    where day_epoch >= {{ from_hour }}

),

final as (

    select
        run_id,
        team,
        model_name,
        cast({{ from_epoch('day_epoch') }} as date) as day,
        requests,
        prompt_tokens,
        generation_tokens,
        gpu_hours,
        cost,
        {{ inference_unit_costs() }},
        ttft_p50_s,
        ttft_p95_s,
        e2e_p95_s,
        mean_requests_running,
        mean_requests_waiting,
        mean_kv_cache_usage,
        mean_utilization,
        max_memory_used_mib,
        hours_served,
        day_epoch
    from run_days

)

select * from final
