-- The coverage of each GPU unit and day as spans: consecutive int_sample_pieces rows (sample
-- intervals cut at the hour) with no uncovered second between them, on the same host and in
-- the same fatal-XID state, merged into one [span_from, span_to): the pieces of one sample
-- always merge, so the spans are those of the samples' intervals. What int_gpu_hour_gaps needs
-- of the coverage (where it stops and starts, which of it is a non-fatal sample of the node),
-- at a few rows per unit and day instead of one per sample. A day's pieces lie within that
-- day, so its spans do too: stored by day, a run recomputes the days of its range
-- (macros/incremental.sql).
--
-- Gaps and islands without numbering every row: one sort of the day's pieces gives each piece
-- its neighbours, and only the pieces where a span starts or ends (a few per unit and day) are
-- kept and paired, the start with the next end (a running count over every piece and a
-- group-by of all of them cost twice as much at 20 M pieces).

{{ incremental_by_day(day_batches=true) }}
with

pieces as (

    select
        unit_key, host, day_epoch, piece_start as valid_from, piece_end as valid_to,
        is_fatal_xid
    from {{ ref('int_sample_pieces') }}
    where {{ in_recomputed_days('day_epoch') }}

),

neighbours as (

    select
        pieces.*,
        lag(valid_to) over (
            partition by unit_key, day_epoch order by valid_from
        ) as prev_to,
        lag(host) over (
            partition by unit_key, day_epoch order by valid_from
        ) as prev_host,
        lag(is_fatal_xid) over (
            partition by unit_key, day_epoch order by valid_from
        ) as prev_fatal,
        lead(valid_from) over (
            partition by unit_key, day_epoch order by valid_from
        ) as next_from,
        lead(host) over (
            partition by unit_key, day_epoch order by valid_from
        ) as next_host,
        lead(is_fatal_xid) over (
            partition by unit_key, day_epoch order by valid_from
        ) as next_fatal,
        row_number() over (
            partition by unit_key, day_epoch order by valid_from
        ) as position
    from pieces

),

edges as (

    -- a span starts after an uncovered second, on another host or in another fatal-XID state
    -- than the piece before; it ends where the next piece starts one
    select
        neighbours.*,
        case
            when prev_to is null or valid_from > prev_to then true
            when coalesce(host, '') <> coalesce(prev_host, '') then true
            when is_fatal_xid <> prev_fatal then true
            else false
        end as starts_span,
        case
            when next_from is null or next_from > valid_to then true
            when coalesce(host, '') <> coalesce(next_host, '') then true
            when is_fatal_xid <> next_fatal then true
            else false
        end as ends_span
    from neighbours

),

boundaries as (

    -- the first and the last piece of each span, in order: a start's span ends at itself or
    -- at the next boundary piece
    select
        edges.*,
        lead(valid_to) over (
            partition by unit_key, day_epoch order by valid_from
        ) as next_boundary_to,
        lead(position) over (
            partition by unit_key, day_epoch order by valid_from
        ) as next_boundary_position
    from edges
    where starts_span or ends_span

),

unit_keys as (

    select * from {{ ref('int_gpu_unit_keys') }}

),

final as (

    -- the unit's UUID and MIG instance, by its key
    select
        unit_keys.gpu_uuid,
        unit_keys.mig_instance,
        boundaries.host,
        boundaries.is_fatal_xid,
        boundaries.valid_from as span_from,
        case
            when boundaries.ends_span then boundaries.valid_to
            else boundaries.next_boundary_to
        end as span_to,
        case
            when boundaries.ends_span then 1
            else boundaries.next_boundary_position - boundaries.position + 1
        end as pieces,
        boundaries.day_epoch
    from boundaries
    inner join unit_keys
        on unit_keys.unit_key = boundaries.unit_key
    where boundaries.starts_span

)

select * from final
