-- One row per inference run (a vLLM server's Kubernetes pod: int_runs' namespace and pod name,
-- within the pod's life), served model and UTC hour that the run held GPUs or served in: what
-- it served and how fast (int_inference_server_hours) beside its GPU-hours, direct cost and
-- GPU utilisation (int_run_gpu_hour_costs; the hour's DCGM mean utilisation and highest memory
-- of the GPUs it held, int_gpu_hour_states, weighted by held seconds). Shared idle cost is not
-- in `cost`. A run serving several models splits its GPU-hours and cost evenly between them
-- (the models it served over its whole life: macros/chooser_inputs.sql, `inference_run_inputs`).
-- Stored by day (macros/incremental.sql): a run rewrites the days from the first hour
-- int_inference_recompute_from chose on (the GPU-hour states' first day, the start of an
-- inference run whose team, pod, start or served models changed, or the end of one whose end
-- alone changed).
-- (the first hour: {{ ref('int_inference_recompute_from') }})
{{ incremental_by_day(to_last_day='int_inference_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_inference_recompute_from') %}
with

runs as (

    select
        run_id,
        team,
        k8s_namespace,
        pod_name,
        {{ to_epoch('started_at') }} as started_epoch,
        {{ to_epoch('ended_at') }} as ended_epoch
    from {{ ref('int_runs') }}
    where scheduler = 'kubernetes' and started_at is not null

),

servers as (

    select * from {{ ref('int_inference_server_hours') }}
    where hour_epoch >= {{ from_hour }}

),

run_gpu_hours as (

    select * from {{ ref('int_run_gpu_hour_costs') }}
    where hour_epoch >= {{ from_hour }}

),

gpu_states as (

    select gpu_uuid, hour_epoch, mean_utilization, max_memory_used_mib
    from {{ ref('int_gpu_hour_states') }}
    where hour_epoch >= {{ from_hour }}

),

served as (

    select
        runs.run_id,
        runs.team,
        servers.*
    from servers
    inner join runs
        on runs.k8s_namespace = servers.k8s_namespace
        and runs.pod_name = servers.k8s_pod
        and servers.hour_epoch + 3600 > runs.started_epoch
        and (runs.ended_epoch is null or servers.hour_epoch <= runs.ended_epoch)

),

run_models as (

    -- every model the run served over its life, not only in the recomputed hours
    select
        run_id,
        team,
        model_name,
        count(*) over (partition by run_id) as models
    from (
        select distinct run_id, team, model_name from ({{ inference_run_inputs() }}) as inputs
    ) as distinct_models

),

costs as (

    select
        run_gpu_hours.run_id,
        run_gpu_hours.hour_epoch,
        sum(run_gpu_hours.held_seconds) / 3600 as gpu_hours,
        sum(run_gpu_hours.cost) as cost,
        sum(run_gpu_hours.held_seconds * gpu_states.mean_utilization)
            / nullif(sum(
                case when gpu_states.mean_utilization is not null
                    then run_gpu_hours.held_seconds end
            ), 0) as mean_utilization,
        max(gpu_states.max_memory_used_mib) as max_memory_used_mib
    from run_gpu_hours
    inner join gpu_states
        on gpu_states.gpu_uuid = run_gpu_hours.gpu_uuid
        and gpu_states.hour_epoch = run_gpu_hours.hour_epoch
    where run_gpu_hours.run_id in (select run_id from run_models)
    group by 1, 2

),

keys as (

    select run_models.run_id, run_models.model_name, costs.hour_epoch
    from costs
    inner join run_models
        on run_models.run_id = costs.run_id
    union
    select run_id, model_name, hour_epoch from served

),

final as (

    select
        keys.run_id,
        run_models.team,
        keys.model_name,
        keys.hour_epoch,
        cast(floor(keys.hour_epoch / 86400) * 86400 as bigint) as day_epoch,
        coalesce(served.requests, 0) as requests,
        coalesce(served.prompt_tokens, 0) as prompt_tokens,
        coalesce(served.generation_tokens, 0) as generation_tokens,
        coalesce(costs.gpu_hours, 0) / run_models.models as gpu_hours,
        coalesce(costs.cost, 0) / run_models.models as cost,
        served.ttft_p50_s,
        served.ttft_p95_s,
        served.e2e_p95_s,
        served.mean_requests_running,
        served.mean_requests_waiting,
        served.mean_kv_cache_usage,
        costs.mean_utilization,
        costs.max_memory_used_mib
    from keys
    inner join run_models
        on run_models.run_id = keys.run_id and run_models.model_name = keys.model_name
    left join served
        on served.run_id = keys.run_id
        and served.model_name = keys.model_name
        and served.hour_epoch = keys.hour_epoch
    left join costs
        on costs.run_id = keys.run_id and costs.hour_epoch = keys.hour_epoch

)

select * from final
