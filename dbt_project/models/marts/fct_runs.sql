-- One row per scheduler run (Slurm allocation attempt or Kubernetes pod): int_runs with its
-- failure class (int_run_failure_classes), queue wait and allocated GPU-hours; a pod of a Kueue
-- workload with its workload, cluster queue, admission wait, evictions and requeues
-- (int_kueue_pod_workloads).
with

runs as (

    select * from {{ ref('int_runs') }}

),

window_bounds as (

    select max(hour_epoch) + 3600 as t_end from {{ ref('int_hours') }}

),

failures as (

    select * from {{ ref('int_run_failure_classes') }}

),

kueue as (

    select * from {{ ref('int_kueue_pod_workloads') }}

),

final as (

    select
        runs.run_id,
        runs.scheduler,
        runs.job_id,
        runs.attempt,
        runs.cluster,
        runs.team,
        runs.user_name,
        runs.account,
        runs.queue,
        runs.kind,
        runs.state,
        failures.failure_class,
        runs.submitted_at,
        runs.eligible_at,
        runs.started_at,
        runs.ended_at,
        {{ to_epoch('runs.started_at') }} - {{ to_epoch('runs.eligible_at') }}
            as queue_wait_seconds,
        runs.gpus,
        runs.mig_slices,
        runs.gpu_equivalents,
        case
            when runs.started_at is null then 0.0
            else runs.gpu_equivalents * (
                coalesce({{ to_epoch('runs.ended_at') }}, window_bounds.t_end)
                - {{ to_epoch('runs.started_at') }}
            ) / 3600
        end as gpu_hours,
        runs.hosts,
        runs.exit_code,
        runs.reason,
        runs.job_name,
        runs.k8s_namespace,
        kueue.workload_name as kueue_workload,
        kueue.cluster_queue as kueue_cluster_queue,
        kueue.admission_wait_seconds as kueue_admission_wait_seconds,
        kueue.evictions as kueue_evictions,
        kueue.requeues as kueue_requeues
    from runs
    cross join window_bounds
    left join failures
        on failures.run_id = runs.run_id
    left join kueue
        on runs.scheduler = 'kubernetes'
        and coalesce(kueue.cluster, '') = coalesce(runs.cluster, '')
        and kueue.pod_uid = runs.job_id_raw

)

select * from final
