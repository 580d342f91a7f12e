-- Kubernetes pods holding GPUs, one row per pod uid (names are reused), from the latest dump.
with

pods as (

    select * from {{ ref('stg_kubernetes__pods') }}

),

latest as (

    select
        pods.*,
        row_number() over (partition by cluster, pod_uid order by snapshot_at desc) as rn
    from pods
    where gpus > 0 or mig_slices > 0

),

final as (

    select
        'kubernetes' as scheduler,
        cluster,
        pod_uid as job_id,
        pod_uid as job_id_raw,
        1 as attempt,
        {{ json_text('labels', "'user'") }} as user_name,
        namespace as account,
        namespace as k8s_namespace,
        pod_name,
        labels,
        namespace as queue,
        pod_name as job_name,
        phase as state,
        exit_code,
        reason,
        created_at as submitted_at,
        created_at as eligible_at,
        started_at,
        finished_at as ended_at,
        gpus,
        mig_slices,
        1 as node_count,
        {{ make_list('host') }} as hosts,
        {{ null_int_list() }} as gpu_indices
    from latest
    where rn = 1

)

select * from final
