-- Every row a reader rejected, from each source's quarantine partitions
-- (raw/quarantine/<source>/<partition>/part-0.parquet, docs/landing.md). The source folder and
-- partition come from the file's path: `<source>.events` holds a slurm source's rejected
-- `sacctmgr` event lines, apart from its jobs.
with

source as (

    select * from {{ landing('quarantine') }}

),

located as (

    select
        x_source,
        x_source_file,
        cast(x_line_number as bigint) as x_line_number,
        reason,
        raw,
        {{ regex_extract('filename', "'/raw/quarantine/([^/]+)/[^/]+/[^/]+$'") }}
            as quarantine_source,
        {{ regex_extract('filename', "'/raw/quarantine/[^/]+/([^/]+)/[^/]+$'") }}
            as partition_key

    from source

),

final as (

    select
        x_source,
        x_source_file,
        x_line_number,
        reason,
        raw,
        quarantine_source,
        partition_key,
        case
            when partition_key like 'date=%' then 'date'
            when partition_key like 'period=%' then 'period'
        end as partition_kind,
        case
            when partition_key like 'date=%'
                then cast(substring(partition_key, 6, 10) as date)
        end as partition_date,
        case
            when partition_key like 'period=%' then substring(partition_key, 8, 7)
        end as billing_period

    from located
    -- the `_schema/` file (no rows) has no source folder
    where quarantine_source is not null

)

select * from final
