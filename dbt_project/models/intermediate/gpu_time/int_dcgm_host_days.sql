-- The DCGM samples of each source, inventory host (resolved as int_dcgm_samples resolves it)
-- and UTC day, counted: which source reports a host, read by the data-health findings instead
-- of every landed sample. Stored by day: a run counts the samples of the days of its range only
-- (macros/incremental.sql).
{{ incremental_by_day() }}
with

samples as (

    select * from {{ ref('int_dcgm_samples') }}
    where {{ at_recomputed_times('sampled_at') }}

),

final as (

    select
        x_source,
        host,
        count(*) as samples,
        floor({{ to_epoch('sampled_at') }} / 86400) * 86400 as day_epoch
    from samples
    group by x_source, host, floor({{ to_epoch('sampled_at') }} / 86400) * 86400

)

select * from final
