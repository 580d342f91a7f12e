with

source as (

    select * from {{ landing('dcgm_samples') }}

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
        container as k8s_container,
        -- the series' other labels (JSON object text), e.g. the XID code (`err_code`/`xid`) of
        -- DCGM_EXP_XID_ERRORS_COUNT, `pci_bus_id`, scrape `job`/`instance`
        labels,
        -- the UTC day of the landing partition the row is in (raw/dcgm_samples/<source>/
        -- date=<day>/), as epoch seconds of its midnight: a row outside it came with a file
        -- of the day before or after (a scrape at midnight)
        {{ to_epoch(
            "cast(" ~ regex_extract('filename', "'/date=([0-9]{4}-[0-9]{2}-[0-9]{2})/[^/]+$'") ~ " as timestamp)"
        ) }} as partition_day_epoch

    from source

)

select * from renamed
