-- One row per vLLM server (namespace, pod), served model and UTC hour with metrics: what it
-- served (requests finished for any reason, prompt and generation tokens: the hour's counter
-- increases, summed over the server's containers, nodes and finished reasons), its latency
-- (TTFT p50 / p95, end-to-end p95: int_inference_latency_hours, the highest of its containers'
-- when it has several) and its gauges' hourly means (requests running and waiting, KV-cache
-- use 0-1; a sample scraped twice counts once). Series without a namespace, pod or model
-- name tie to no server and are left out. Each hour reads that hour's rows only: stored by day
-- (of the hour), a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day() }}
with

counters as (

    select * from {{ ref('int_inference_counter_hours') }}
    where {{ in_recomputed_days('day_epoch') }}

),

latency as (

    select * from {{ ref('int_inference_latency_hours') }}
    where {{ in_recomputed_days('day_epoch') }}

),

gauge_samples as (

    select
        k8s_namespace,
        k8s_pod,
        model_name,
        metric,
        host,
        k8s_container,
        sampled_at,
        max(value) as value
    from {{ ref('stg_inference__samples') }}
    where {{ at_recomputed_times('sampled_at') }} and metric in (
        'vllm:num_requests_running', 'vllm:num_requests_waiting', 'vllm:kv_cache_usage_perc'
    )
    group by 1, 2, 3, 4, 5, 6, 7

),

gauges as (

    select
        k8s_namespace,
        k8s_pod,
        model_name,
        cast(floor({{ to_epoch('sampled_at') }} / 3600) * 3600 as bigint) as hour_epoch,
        avg(case when metric = 'vllm:num_requests_running' then value end)
            as mean_requests_running,
        avg(case when metric = 'vllm:num_requests_waiting' then value end)
            as mean_requests_waiting,
        avg(case when metric = 'vllm:kv_cache_usage_perc' then value end)
            as mean_kv_cache_usage
    from gauge_samples
    group by 1, 2, 3, 4

),

served as (

    select
        k8s_namespace,
        k8s_pod,
        model_name,
        hour_epoch,
        sum(case when metric = 'vllm:request_success_total' then increase else 0 end)
            as requests,
        sum(case when metric = 'vllm:prompt_tokens_total' then increase else 0 end)
            as prompt_tokens,
        sum(case when metric = 'vllm:generation_tokens_total' then increase else 0 end)
            as generation_tokens,
        sum(resets) as counter_resets
    from counters
    where metric in (
        'vllm:request_success_total', 'vllm:prompt_tokens_total', 'vllm:generation_tokens_total'
    )
    group by 1, 2, 3, 4

),

latencies as (

    select
        k8s_namespace,
        k8s_pod,
        model_name,
        hour_epoch,
        max(case when histogram = 'vllm:time_to_first_token_seconds' then p50_seconds end)
            as ttft_p50_s,
        max(case when histogram = 'vllm:time_to_first_token_seconds' then p95_seconds end)
            as ttft_p95_s,
        max(case when histogram = 'vllm:e2e_request_latency_seconds' then p95_seconds end)
            as e2e_p95_s
    from latency
    group by 1, 2, 3, 4

),

keys as (

    select k8s_namespace, k8s_pod, model_name, hour_epoch from served
    union
    select k8s_namespace, k8s_pod, model_name, hour_epoch from latencies
    union
    select k8s_namespace, k8s_pod, model_name, hour_epoch from gauges

),

-- a server is its pod: series without namespace, pod or model name tie to no run
server_keys as (

    select * from keys
    where k8s_namespace is not null and k8s_pod is not null and model_name is not null

),

final as (

    select
        keys.k8s_namespace,
        keys.k8s_pod,
        keys.model_name,
        keys.hour_epoch,
        floor(keys.hour_epoch / 86400) * 86400 as day_epoch,
        coalesce(served.requests, 0) as requests,
        coalesce(served.prompt_tokens, 0) as prompt_tokens,
        coalesce(served.generation_tokens, 0) as generation_tokens,
        coalesce(served.counter_resets, 0) as counter_resets,
        latencies.ttft_p50_s,
        latencies.ttft_p95_s,
        latencies.e2e_p95_s,
        gauges.mean_requests_running,
        gauges.mean_requests_waiting,
        gauges.mean_kv_cache_usage
    from server_keys as keys
    left join served
        on served.k8s_namespace = keys.k8s_namespace
        and served.k8s_pod = keys.k8s_pod
        and served.model_name = keys.model_name
        and served.hour_epoch = keys.hour_epoch
    left join latencies
        on latencies.k8s_namespace = keys.k8s_namespace
        and latencies.k8s_pod = keys.k8s_pod
        and latencies.model_name = keys.model_name
        and latencies.hour_epoch = keys.hour_epoch
    left join gauges
        on gauges.k8s_namespace = keys.k8s_namespace
        and gauges.k8s_pod = keys.k8s_pod
        and gauges.model_name = keys.model_name
        and gauges.hour_epoch = keys.hour_epoch

)

select * from final
