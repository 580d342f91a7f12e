with

source as (

    select * from {{ source('landing', 'dcgm_samples') }}

),

renamed as (

    select
        x_source,
        time as sampled_at,
        host,
        cast(gpu as integer) as gpu_index,
        uuid as gpu_uuid,
        mig_instance,
        mig_profile,
        metric,
        cast(value as double) as value,
        model_name,
        hpc_job,
        namespace as k8s_namespace,
        pod as k8s_pod,
        -- the series' other labels (JSON object text), e.g. the XID code (`err_code`/`xid`) of
        -- DCGM_EXP_XID_ERRORS_COUNT, `pci_bus_id`, scrape `job`/`instance`
        labels

    from source

)

select * from renamed
