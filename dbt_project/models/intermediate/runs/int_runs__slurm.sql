-- Slurm allocations, one row per run (allocation attempt). The same attempt appears in every
-- export it overlaps: keep the row of the latest export, by the export's own evidence (its
-- day, `{date}` or a date in the file name; then when it was written: the sacct call, else
-- the file's mtime), then by the row's own (a row with an End beats one without, a later End
-- an earlier one, RUNNING a pending one), then by line. A requeued job's attempts share
-- JobIDRaw and are told apart by their start; a pending row is dropped once a later export
-- shows the job started after it was submitted. An unstarted array range (`123_[0-99%10]`)
-- is one pending run per task (`123_0` ... `123_99`); a task is dropped once it started.
with

jobs as (

    select * from {{ ref('stg_slurm__jobs') }}

),

ranked as (

    select
        jobs.*,
        case when snapshot_date is null then 0 else 1 end as has_snapshot_date,
        case when exported_at is null then 0 else 1 end as has_exported_at,
        case
            when ended_at is not null then 2
            when state = 'RUNNING' then 1
            else 0
        end as progress,
        case when ended_at is null then 0 else 1 end as has_end
    from jobs

),

started as (

    select
        ranked.*,
        row_number() over (
            partition by cluster, job_id_raw, started_at
            order by
                has_snapshot_date desc,
                snapshot_date desc,
                has_exported_at desc,
                exported_at desc,
                progress desc,
                has_end desc,
                ended_at desc,
                x_line_number desc
        ) as rn
    from ranked
    where started_at is not null

),

latest_started as (

    select * from started where rn = 1

),

pending as (

    select
        ranked.*,
        row_number() over (
            partition by cluster, job_id_raw, submitted_at
            order by
                has_snapshot_date desc,
                snapshot_date desc,
                has_exported_at desc,
                exported_at desc,
                x_line_number desc
        ) as rn
    from ranked
    where started_at is null

),

latest_pending as (

    select * from pending where rn = 1

),

pending_jobs as (

    -- a pending job that is not an array range: dropped once its JobIDRaw started
    select latest_pending.*
    from latest_pending
    where
        latest_pending.array_task_ids is null
        and not exists (
            select 1
            from latest_started
            where
                latest_started.cluster = latest_pending.cluster
                and latest_started.job_id_raw = latest_pending.job_id_raw
                and latest_started.started_at >= latest_pending.submitted_at
        )

),

pending_tasks as (

    -- an array range: one pending run per task it lists
    select
        latest_pending.*,
        {{ explode_list('latest_pending.array_task_ids') }} as task_id
    from latest_pending
    where latest_pending.array_task_ids is not null

),

still_pending_tasks as (

    -- a task is dropped once a started row of the same array task exists
    select pending_tasks.*
    from pending_tasks
    where not exists (
        select 1
        from latest_started
        where
            latest_started.cluster = pending_tasks.cluster
            and latest_started.array_job_id = pending_tasks.array_job_id
            and latest_started.array_task_id = pending_tasks.task_id
            and latest_started.started_at >= pending_tasks.submitted_at
    )

),

runs as (

    select
        cluster, job_id, job_id_raw, user_name, account, partition, job_name, state, exit_code,
        submitted_at, eligible_at, started_at, ended_at, gpus, mig_slices, mig_profile, node_count, hosts, gpu_indices
    from latest_started
    union all
    select
        cluster, job_id, job_id_raw, user_name, account, partition, job_name, state, exit_code,
        submitted_at, eligible_at, started_at, ended_at, gpus, mig_slices, mig_profile, node_count, hosts, gpu_indices
    from pending_jobs
    union all
    select
        cluster,
        array_job_id || '_' || cast(task_id as string) as job_id,
        job_id_raw, user_name, account, partition, job_name, state, exit_code,
        submitted_at, eligible_at, started_at, ended_at, gpus, mig_slices, mig_profile, node_count, hosts, gpu_indices
    from still_pending_tasks

),

final as (

    select
        'slurm' as scheduler,
        cluster,
        job_id,
        job_id_raw,
        cast(row_number() over (
            partition by cluster, job_id_raw, job_id
            order by coalesce(started_at, submitted_at)
        ) as integer) as attempt,
        user_name,
        account,
        cast(null as string) as k8s_namespace,
        cast(null as string) as pod_name,
        cast(null as string) as labels,
        partition as queue,
        job_name,
        state,
        exit_code,
        cast(null as string) as reason,
        submitted_at,
        coalesce(eligible_at, submitted_at) as eligible_at,
        started_at,
        ended_at,
        gpus,
        -- MIG instances (`gres/gpu:1g.10gb=1`): their compute slices, of a GPU's 7
        mig_slices,
        -- their MIG profile when they share one (null: no MIG, or several profiles)
        mig_profile,
        greatest(node_count, 1) as node_count,
        hosts,
        gpu_indices
    from runs

)

select * from final
