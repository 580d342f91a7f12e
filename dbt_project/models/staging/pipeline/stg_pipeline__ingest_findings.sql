-- What each source's latest ingest found (ingest/core/findings_landing.py lands the findings of
-- every ingest asset under raw/ingest_findings/<source>/, with the Dagster run id), one row per
-- source, day, check, severity and message of a run: repeated findings are summed.
with

source as (

    select * from {{ landing('ingest_findings') }}

),

renamed as (

    select
        run_id,
        run_at,
        source,
        cast(day as date) as day,
        check_name,
        severity,
        cast(count as bigint) as count,
        message

    from source

),

final as (

    select
        run_id,
        max(run_at) as run_at,
        source,
        day,
        check_name,
        severity,
        sum(count) as count,
        message
    from renamed
    group by run_id, source, day, check_name, severity, message

)

select * from final
