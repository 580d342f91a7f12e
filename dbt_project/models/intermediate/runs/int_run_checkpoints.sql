-- The last checkpoint marker of each run in its own window [started_at, ended_at) (no end while
-- it runs). Slurm: the job's log file is named by JobIDRaw (`slurm-%j.out`) or by array job and
-- task (`slurm-%A_%a.out`, = the run's job_id); a requeued job's attempts share the file and are
-- told apart by their windows. Kubernetes: namespace + pod name (names are reused: the window
-- tells the pods apart). Always within the run's cluster.
with

runs as (

    select * from {{ ref('int_runs') }}
    where started_at is not null

),

checkpoints as (

    select * from {{ ref('stg_run_logs__checkpoints') }}

),

matched as (

    select
        runs.run_id,
        checkpoints.checkpoint_at
    from runs
    inner join checkpoints
        on checkpoints.scheduler = runs.scheduler
        and checkpoints.cluster = runs.cluster
        and checkpoints.checkpoint_at >= runs.started_at
        and (runs.ended_at is null or checkpoints.checkpoint_at < runs.ended_at)
        and (
            (
                runs.scheduler = 'slurm'
                and (
                    checkpoints.job_id_raw = runs.job_id_raw
                    or checkpoints.job_id = runs.job_id
                )
            )
            or (
                runs.scheduler = 'kubernetes'
                and checkpoints.k8s_namespace = runs.k8s_namespace
                and checkpoints.pod_name = runs.pod_name
            )
        )

),

final as (

    select
        run_id,
        max(checkpoint_at) as last_checkpoint_at,
        count(*) as checkpoints
    from matched
    group by run_id

)

select * from final
