-- Why each run failed, if it did (docs/metrics.md, fct_runs `failure_class`): `infra` when the
-- scheduler says the node failed, the boot failed or the run was preempted, or when a GPU the
-- run held reported a fatal XID while it held it; `user` when the job failed, ran out of memory
-- or time, was cancelled after it started, or exited non-zero; null otherwise. A Kubernetes pod
-- that did not succeed is `infra` when its reason is one of var `k8s_infra_failure_reasons`
-- (evicted, node lost, preempted, UnexpectedAdmissionError) or its Kueue workload was evicted
-- while it ran; other Failed pods are `user`.
with

runs as (

    select * from {{ ref('int_runs') }}

),

-- pods whose Kueue workload was evicted (var `kueue_infra_eviction_reasons`: preempted, its
-- nodes failed) while they ran
kueue_evicted_runs as (

    select distinct runs.run_id
    from runs
    inner join {{ ref('int_kueue_pod_workloads') }} as kueue
        on coalesce(kueue.cluster, '') = coalesce(runs.cluster, '')
        and kueue.pod_uid = runs.job_id_raw
    where
        runs.scheduler = 'kubernetes'
        and runs.started_at is not null
        and kueue.evicted_reason in ({{ "'" ~ var('kueue_infra_eviction_reasons') | join("', '") ~ "'" }})
        and kueue.evicted_at >= runs.started_at
        and (runs.ended_at is null or kueue.evicted_at <= runs.ended_at)

),

fatal_xid_runs as (

    select distinct holdings.run_id
    from {{ ref('int_run_gpu_holdings') }} as holdings
    inner join {{ ref('int_gpu_samples') }} as samples
        on samples.gpu_uuid = holdings.gpu_uuid
        and samples.is_fatal_xid
        and samples.t >= holdings.held_from
        and samples.t <= holdings.held_to

),

final as (

    select
        runs.run_id,
        fatal_xid_runs.run_id is not null as has_fatal_xid,
        case
            when runs.state in ('NODE_FAIL', 'BOOT_FAIL', 'PREEMPTED') then 'infra'
            when fatal_xid_runs.run_id is not null then 'infra'
            when
                runs.scheduler = 'kubernetes'
                and coalesce(runs.state, '') <> 'Succeeded'
                and runs.reason in ({{ "'" ~ var('k8s_infra_failure_reasons') | join("', '") ~ "'" }})
                then 'infra'
            when kueue_evicted_runs.run_id is not null and coalesce(runs.state, '') <> 'Succeeded'
                then 'infra'
            when runs.state in ('FAILED', 'OUT_OF_MEMORY', 'TIMEOUT', 'Failed') then 'user'
            when runs.state = 'CANCELLED' and runs.started_at is not null then 'user'
            when coalesce(runs.exit_code, 0) <> 0 then 'user'
        end as failure_class
    from runs
    left join fatal_xid_runs
        on fatal_xid_runs.run_id = runs.run_id
    left join kueue_evicted_runs
        on kueue_evicted_runs.run_id = runs.run_id

)

select * from final
