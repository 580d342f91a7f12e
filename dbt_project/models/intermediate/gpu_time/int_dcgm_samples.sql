{{ config(materialized='view') }}
-- The landed DCGM samples with each sample's host resolved to its inventory node
-- (int_dcgm_host_labels: a Kubernetes exporter pod's `node` label); every model that reads
-- samples reads them here.
with

samples as (

    select * from {{ ref('stg_dcgm__samples') }}

),

resolved as (

    select * from {{ ref('int_dcgm_host_labels') }}
    where host is not null

),

final as (

    select
        samples.x_source,
        samples.sampled_at,
        coalesce(resolved.host, samples.host) as host,
        samples.host as reported_host,
        samples.gpu_index,
        samples.gpu_uuid,
        samples.mig_instance,
        samples.mig_profile,
        samples.metric,
        samples.value,
        samples.model_name,
        samples.hpc_job,
        samples.k8s_namespace,
        samples.k8s_pod,
        samples.labels
    from samples
    left join resolved
        on resolved.reported_host = samples.host
        and resolved.labels = coalesce(samples.labels, '')
        and resolved.x_source = samples.x_source

)

select * from final
