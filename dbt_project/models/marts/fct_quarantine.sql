-- Rows the readers rejected, counted per source, partition and reason (data health): what did
-- not reach the warehouse, and why. The rows themselves are in stg_quarantine__rows.
with

rows_ as (

    select * from {{ ref('stg_quarantine__rows') }}

),

final as (

    select
        quarantine_source as source,
        partition_key as partition,
        partition_kind,
        partition_date,
        billing_period,
        reason,
        count(*) as rows,
        count(distinct x_source_file) as files

    from rows_
    group by
        quarantine_source, partition_key, partition_kind, partition_date, billing_period, reason

)

select * from final
