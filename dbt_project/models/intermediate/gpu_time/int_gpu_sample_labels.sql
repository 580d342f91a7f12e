-- Who the exporter said held a GPU at a sample: Slurm job (hpc_job = JobIDRaw) or pod.
with

samples as (

    select * from {{ ref('int_dcgm_samples') }}
    where hpc_job is not null or k8s_pod is not null

),

final as (

    select distinct
        gpu_uuid,
        coalesce(mig_instance, '') as mig_instance,
        host,
        {{ to_epoch('sampled_at') }} as t,
        hpc_job,
        k8s_namespace,
        k8s_pod
    from samples

)

select * from final
