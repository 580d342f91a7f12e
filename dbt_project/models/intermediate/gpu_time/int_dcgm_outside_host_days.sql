-- The DCGM samples whose host names no inventory node, counted per source, reported host,
-- label set and UTC day: what int_dcgm_host_labels resolves. Stored by day: a run counts the
-- samples of the days of its range only (macros/incremental.sql), not the landed history.
{{ incremental_by_day() }}
with

inventory as (

    select host from {{ ref('stg_config__inventory') }}

),

samples as (

    select * from {{ ref('stg_dcgm__samples') }}
    where host not in (select host from inventory)
        and {{ at_recomputed_times('sampled_at') }}

),

final as (

    select
        x_source,
        host as reported_host,
        coalesce(labels, '') as labels,
        count(*) as samples,
        floor({{ to_epoch('sampled_at') }} / 86400) * 86400 as day_epoch
    from samples
    group by x_source, host, coalesce(labels, ''), floor({{ to_epoch('sampled_at') }} / 86400) * 86400

)

select * from final
