-- Kubernetes pods holding GPUs, one row per pod uid (names are reused), from the latest dump.
-- What never changes in a pod's life (created, started, node) falls back on any dump that
-- knows it, so a later dump that lacks a field never erases what earlier dumps said.
with

pods as (

    select * from {{ ref('stg_kubernetes__pods') }}

),

latest as (

    select
        pods.*,
        row_number() over (partition by cluster, pod_uid order by snapshot_at desc) as rn,
        min(created_at) over (partition by cluster, pod_uid) as known_created_at,
        min(started_at) over (partition by cluster, pod_uid) as known_started_at,
        max(finished_at) over (partition by cluster, pod_uid) as known_finished_at,
        max(host) over (partition by cluster, pod_uid) as known_host
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
        coalesce(created_at, known_created_at) as submitted_at,
        coalesce(created_at, known_created_at) as eligible_at,
        coalesce(started_at, known_started_at) as started_at,
        coalesce(finished_at, known_finished_at) as ended_at,
        gpus,
        mig_slices,
        cast(null as varchar) as mig_profile,
        1 as node_count,
        {{ make_list('coalesce(host, known_host)') }} as hosts,
        {{ null_int_list() }} as gpu_indices
    from latest
    where rn = 1

)

select * from final
