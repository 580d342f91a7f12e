-- Who the exporter said held a GPU at a sample: Slurm job (hpc_job = JobIDRaw) or pod.
-- Stored by sample day: a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day(day_batches=true) }}
with

samples as (

    select * from {{ ref('int_dcgm_samples') }}
    where (hpc_job is not null or k8s_pod is not null)
        and {{ at_recomputed_times('sampled_at') }}

),

labels as (

    -- the day follows from the time, so it is added after the distinct: one key column fewer
    -- to hash for every landed row (0.15-0.2 CPU s of 1.6-1.8 a day at 1,024 GPUs x 30 s)
    select distinct
        gpu_uuid,
        coalesce(mig_instance, '') as mig_instance,
        host,
        {{ to_epoch('sampled_at') }} as t,
        hpc_job,
        k8s_namespace,
        k8s_pod
    from samples

),

final as (

    select labels.*, floor(labels.t / 86400) * 86400 as day_epoch from labels

)

select * from final
