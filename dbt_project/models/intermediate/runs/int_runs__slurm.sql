-- Slurm allocations, one row per run (allocation attempt). The same attempt appears in every
-- daily export it overlaps: keep the row of the latest export. A requeued job's attempts share
-- JobIDRaw and are told apart by their start; a pending row is dropped once a later export
-- shows the job started after it was submitted.
with

jobs as (

    select * from {{ ref('stg_slurm__jobs') }}

),

started as (

    select
        jobs.*,
        row_number() over (
            partition by cluster, job_id_raw, started_at
            order by snapshot_date desc, x_line_number desc
        ) as rn
    from jobs
    where started_at is not null

),

latest_started as (

    select * from started where rn = 1

),

pending as (

    select
        jobs.*,
        row_number() over (
            partition by cluster, job_id_raw, submitted_at
            order by snapshot_date desc, x_line_number desc
        ) as rn
    from jobs
    where started_at is null

),

still_pending as (

    select pending.*
    from pending
    where
        pending.rn = 1
        and not exists (
            select 1
            from latest_started
            where
                latest_started.cluster = pending.cluster
                and latest_started.job_id_raw = pending.job_id_raw
                and latest_started.started_at >= pending.submitted_at
        )

),

runs as (

    select * from latest_started
    union all
    select * from still_pending

),

final as (

    select
        'slurm' as scheduler,
        cluster,
        job_id,
        job_id_raw,
        cast(row_number() over (
            partition by cluster, job_id_raw
            order by coalesce(started_at, submitted_at)
        ) as integer) as attempt,
        user_name,
        account,
        cast(null as varchar) as k8s_namespace,
        cast(null as varchar) as pod_name,
        cast(null as varchar) as labels,
        partition as queue,
        job_name,
        state,
        exit_code,
        cast(null as varchar) as reason,
        submitted_at,
        coalesce(eligible_at, submitted_at) as eligible_at,
        started_at,
        ended_at,
        gpus,
        0 as mig_slices,
        greatest(node_count, 1) as node_count,
        hosts,
        gpu_indices
    from runs

)

select * from final
