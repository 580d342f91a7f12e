-- Checkpoint markers found in job log files (ingest/run_logs.py), one row per marker line.
with

source as (

    select * from {{ landing('run_log_checkpoints') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        scheduler,
        cluster,
        job_id_raw,
        job_id,
        namespace as k8s_namespace,
        pod as pod_name,
        checkpoint_at,
        message

    from source

)

select * from renamed
