-- Who the exporter said held a GPU at a sample: Slurm job (hpc_job = JobIDRaw) or pod.
-- Stored by sample day: a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day(day_batches=true) }}
with

samples as (

    select * from {{ ref('int_dcgm_samples') }}
    where (hpc_job is not null or k8s_pod is not null)
        and {{ at_recomputed_times('sampled_at') }}

),

final as (

    select distinct
        gpu_uuid,
        coalesce(mig_instance, '') as mig_instance,
        host,
        {{ to_epoch('sampled_at') }} as t,
        hpc_job,
        k8s_namespace,
        k8s_pod,
        floor({{ to_epoch('sampled_at') }} / 86400) * 86400 as day_epoch
    from samples

)

select * from final
