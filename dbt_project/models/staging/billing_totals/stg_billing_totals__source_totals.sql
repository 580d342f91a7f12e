with

source as (

    select * from {{ landing('billing_source_totals') }}

),

renamed as (

    select
        landing_table,
        x_source,
        x_source_file,
        period as billing_period,
        currency,
        total_basis,
        source_rows,
        cast(source_total as double) as source_total,
        quarantined_rows,
        cast(quarantined_total as double) as quarantined_total,
        unreadable_rows,
        computed_at

    from source

)

select * from renamed
