{{ config(materialized='view') }}
-- The landed DCGM samples with each sample's host resolved to its inventory node
-- (int_dcgm_host_labels: a Kubernetes exporter pod's `node` label); every model that reads
-- samples reads them here.
-- Only the samples of a reported host some series of which resolves elsewhere are joined to
-- the host labels: the others (every sample of a fleet whose exporters report inventory hosts)
-- pass through, tested against the few resolved host names only. The join on source, host
-- and label set over every sample cost 11 of the 27 s of int_gpu_samples at 1,024 GPUs x
-- 7 days x 30 s (about 100 M samples), where it matched nothing.
with

resolved as (

    select * from {{ ref('int_dcgm_host_labels') }}
    where host is not null

),

resolved_hosts as (

    select distinct reported_host from resolved
    where reported_host is not null

),

as_reported as (

    select
        x_source,
        sampled_at,
        host,
        host as reported_host,
        gpu_index,
        gpu_uuid,
        mig_instance,
        mig_profile,
        metric,
        value,
        model_name,
        hpc_job,
        k8s_namespace,
        k8s_pod,
        labels
    -- read twice, not from a shared CTE: DuckDB materializes a CTE read twice (all samples)
    from {{ ref('stg_dcgm__samples') }} as samples
    where samples.host is null
        or samples.host not in (select reported_host from resolved_hosts)

),

resolved_samples as (

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
    from {{ ref('stg_dcgm__samples') }} as samples
    left join resolved
        on resolved.reported_host = samples.host
        and resolved.labels = coalesce(samples.labels, '')
        and resolved.x_source = samples.x_source
    where samples.host in (select reported_host from resolved_hosts)

),

final as (

    select * from as_reported
    union all
    select * from resolved_samples

)

select * from final
