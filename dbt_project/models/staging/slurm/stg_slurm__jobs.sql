with

source as (

    select * from {{ source('landing', 'slurm_jobs') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        cast(x_snapshot_date as date) as snapshot_date,
        cluster,
        job_id,
        job_id_raw,
        array_job_id,
        array_task_id,
        partition,
        qos,
        account,
        user_name,
        submit as submitted_at,
        eligible as eligible_at,
        start as started_at,
        "end" as ended_at,
        cast(elapsed_seconds as bigint) as elapsed_seconds,
        cast(exit_code as integer) as exit_code,
        state,
        cast(nnodes as integer) as node_count,
        cast(gpus as integer) as gpus,
        hosts,
        job_name

    from source

)

select * from renamed
