with

source as (

    select * from {{ landing('slurm_jobs') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        cast(x_snapshot_date as date) as snapshot_date,
        -- when the export was written (the command's run, else the file's mtime)
        x_exported_at as exported_at,
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
        {{ adapter.quote('end') }} as ended_at,
        cast(elapsed_seconds as bigint) as elapsed_seconds,
        cast(exit_code as integer) as exit_code,
        state,
        cast(nnodes as integer) as node_count,
        -- whole GPUs; MIG instances (`gres/gpu:1g.10gb=1`) are counted apart
        cast(gpus as integer) as gpus,
        cast(coalesce(mig_instances, 0) as integer) as mig_instances,
        cast(coalesce(mig_slices, 0) as integer) as mig_slices,
        mig_profile,
        hosts,
        gpu_indices,
        job_name,
        -- an unstarted array range (`123_[5-9]`) is one row: the task ids it stands for, and
        -- `gpus` per task
        array_task_ids,
        het_job_id,
        cast(het_job_offset as integer) as het_job_offset,
        cast(req_cpus as integer) as requested_cpus,
        req_mem_mib as requested_memory_mib,
        req_mem_per as requested_memory_per,
        alloc_mem_mib as allocated_memory_mib,
        cast(timelimit_seconds as bigint) as timelimit_seconds,
        cast(step_count as integer) as step_count,
        max_rss_mib

    from source

)

select * from renamed
