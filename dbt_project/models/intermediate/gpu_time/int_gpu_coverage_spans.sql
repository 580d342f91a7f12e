-- The coverage of each GPU unit and day as spans: consecutive int_sample_intervals rows with
-- no uncovered second between them, on the same host and in the same fatal-XID state, merged
-- into one [span_from, span_to). What int_gpu_hour_gaps needs of the coverage (where it stops
-- and starts, which of it is a non-fatal sample of the node), at a few rows per unit and day
-- instead of one per sample. A day's intervals lie within that day, so its spans do too: stored
-- by day, a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day() }}
with

intervals as (

    select gpu_uuid, mig_instance, host, day_epoch, valid_from, valid_to, is_fatal_xid
    from {{ ref('int_sample_intervals') }}
    where {{ in_recomputed_days('day_epoch') }}

),

previous as (

    select
        intervals.*,
        lag(valid_to) over (
            partition by gpu_uuid, mig_instance, day_epoch order by valid_from
        ) as prev_to,
        lag(host) over (
            partition by gpu_uuid, mig_instance, day_epoch order by valid_from
        ) as prev_host,
        lag(is_fatal_xid) over (
            partition by gpu_uuid, mig_instance, day_epoch order by valid_from
        ) as prev_fatal
    from intervals

),

flagged as (

    select
        previous.*,
        case
            when prev_to is null or valid_from > prev_to then 1
            when coalesce(host, '') <> coalesce(prev_host, '') then 1
            when is_fatal_xid <> prev_fatal then 1
            else 0
        end as starts_span
    from previous

),

numbered as (

    select
        flagged.*,
        sum(starts_span) over (
            partition by gpu_uuid, mig_instance, day_epoch order by valid_from
            rows between unbounded preceding and current row
        ) as span_number
    from flagged

),

final as (

    select
        gpu_uuid,
        mig_instance,
        max(host) as host,
        is_fatal_xid,
        min(valid_from) as span_from,
        max(valid_to) as span_to,
        count(*) as intervals,
        day_epoch
    from numbered
    group by gpu_uuid, mig_instance, day_epoch, span_number, is_fatal_xid

)

select * from final
