-- consolidate_replicas (docs/metrics.md, "Recommendations"): an inference service (a served
-- model_name) with at least two replicas (runs) in the window whose every hourly TTFT p95
-- stayed at most var inference_ttft_slo_seconds. Its per-GPU capacity is the best hourly
-- tokens/s per GPU that a replica reached (prompt + generation tokens / its GPU-seconds; an
-- hour within the SLO); the GPUs it needs = ceil(its p95 hourly tokens/s, all replicas
-- together / that capacity); it holds the most GPU-equivalents of any hour. Savings: the GPUs
-- it could release x its direct cost per GPU-hour x var recommendation_hours_per_month.
with

run_hours as (

    select * from {{ ref('int_inference_run_hours') }}

),

service_hours as (

    select
        model_name,
        hour_epoch,
        sum(prompt_tokens + generation_tokens) / 3600 as tokens_per_second,
        sum(gpu_hours) as gpus,
        max(ttft_p95_s) as ttft_p95_s
    from run_hours
    group by 1, 2

),

per_service as (

    select
        model_name,
        {{ percentile_cont('tokens_per_second', 0.95) }} as p95_tokens_per_second,
        max(gpus) as peak_gpus,
        max(ttft_p95_s) as worst_ttft_p95_s
    from service_hours
    group by 1

),

capacity as (

    select
        model_name,
        count(distinct run_id) as replicas,
        count(distinct day_epoch) as days_observed,
        min(team) as team,
        sum(gpu_hours) as gpu_hours,
        sum(cost) as window_cost,
        sum(cost) / nullif(sum(gpu_hours), 0) as cost_per_gpu_hour,
        max(case
            when gpu_hours > 0 and ttft_p95_s <= {{ var('inference_ttft_slo_seconds') }}
            then (prompt_tokens + generation_tokens) / (gpu_hours * 3600.0)
        end) as peak_tokens_per_gpu_second,
        {{ percentile_cont('mean_utilization', 0.95) }} as p95_utilization,
        {{ percentile_cont('max_memory_used_mib', 0.95) }} / 1024 as p95_memory_gb
    from run_hours
    group by 1

),

window_hours as (

    select count(*) as hours from {{ ref('int_hours') }}

),

sized as (

    select
        capacity.*,
        per_service.p95_tokens_per_second,
        per_service.worst_ttft_p95_s,
        ceiling(per_service.peak_gpus - 0.000001) as held_gpus,
        ceiling(
            per_service.p95_tokens_per_second / capacity.peak_tokens_per_gpu_second - 0.000001
        ) as needed_gpus
    from capacity
    inner join per_service
        on per_service.model_name = capacity.model_name
    where capacity.peak_tokens_per_gpu_second > 0

),

final as (

    select
        'consolidate_replicas' as kind,
        sized.model_name as subject,
        sized.team,
        cast(null as string) as owner,
        sized.days_observed,
        sized.p95_utilization,
        sized.p95_memory_gb,
        sized.gpu_hours,
        sized.window_cost,
        (sized.held_gpus - sized.needed_gpus) * sized.cost_per_gpu_hour * window_hours.hours
            as window_savings,
        (sized.held_gpus - sized.needed_gpus) * sized.cost_per_gpu_hour
            * {{ var('recommendation_hours_per_month') }} as monthly_savings,
        'serve on ' || cast(cast(sized.needed_gpus as integer) as string) || ' GPUs instead of '
            || cast(cast(sized.held_gpus as integer) as string) as action,
        cast(sized.replicas as string) || ' replicas; p95 '
            || cast(round(sized.p95_tokens_per_second, 1) as string) || ' tokens/s, best '
            || cast(round(sized.peak_tokens_per_gpu_second, 1) as string)
            || ' tokens/s per GPU; worst TTFT p95 '
            || cast(round(sized.worst_ttft_p95_s, 3) as string) || ' s' as evidence
    from sized
    cross join window_hours
    where sized.replicas >= 2
        and sized.worst_ttft_p95_s <= {{ var('inference_ttft_slo_seconds') }}
        and sized.needed_gpus < sized.held_gpus

)

select * from final
