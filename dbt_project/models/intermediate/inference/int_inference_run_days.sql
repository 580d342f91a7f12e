-- int_inference_run_hours summed per run, served model and UTC day: requests, tokens,
-- GPU-hours and cost add up; a day's latency is its worst hour's (the highest hourly TTFT p50 /
-- p95 and end-to-end p95: what an SLO is held to; quantiles of hours do not combine into the
-- day's quantile); gauges are the mean of the hourly means; utilisation is weighted by GPU-hours.
-- Stored by day with the run hours it sums (macros/incremental.sql): a run rewrites the days
-- from the first hour int_inference_recompute_from chose on.
-- (the first hour: {{ ref('int_inference_recompute_from') }})
{{ incremental_by_day(to_last_day='int_inference_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_inference_recompute_from') %}
with

run_hours as (

    select * from {{ ref('int_inference_run_hours') }}
    where day_epoch >= {{ from_hour }}

),

final as (

    select
        run_id,
        team,
        model_name,
        day_epoch,
        sum(requests) as requests,
        sum(prompt_tokens) as prompt_tokens,
        sum(generation_tokens) as generation_tokens,
        sum(gpu_hours) as gpu_hours,
        sum(cost) as cost,
        max(ttft_p50_s) as ttft_p50_s,
        max(ttft_p95_s) as ttft_p95_s,
        max(e2e_p95_s) as e2e_p95_s,
        avg(mean_requests_running) as mean_requests_running,
        avg(mean_requests_waiting) as mean_requests_waiting,
        avg(mean_kv_cache_usage) as mean_kv_cache_usage,
        sum(gpu_hours * mean_utilization)
            / nullif(sum(case when mean_utilization is not null then gpu_hours end), 0)
            as mean_utilization,
        max(max_memory_used_mib) as max_memory_used_mib,
        sum(case when requests > 0 then 1 else 0 end) as hours_served
    from run_hours
    group by 1, 2, 3, 4

)

select * from final
