-- One row per scheduler run (Slurm allocation attempt or Kubernetes pod).
with

runs as (

    select * from {{ ref('int_runs') }}

),

window_bounds as (

    select max(hour_epoch) + 3600 as t_end from {{ ref('int_hours') }}

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
        case
            when runs.state in ('NODE_FAIL', 'BOOT_FAIL', 'PREEMPTED') then 'infra'
            when fatal_xid_runs.run_id is not null then 'infra'
            when runs.state in ('FAILED', 'OUT_OF_MEMORY', 'TIMEOUT', 'Failed') then 'user'
            when runs.state = 'CANCELLED' and runs.started_at is not null then 'user'
            when coalesce(runs.exit_code, 0) <> 0 then 'user'
        end as failure_class,
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
            ) / 3600.0
        end as gpu_hours,
        runs.hosts,
        runs.exit_code,
        runs.reason,
        runs.job_name,
        runs.k8s_namespace
    from runs
    cross join window_bounds
    left join fatal_xid_runs
        on fatal_xid_runs.run_id = runs.run_id

)

select * from final
