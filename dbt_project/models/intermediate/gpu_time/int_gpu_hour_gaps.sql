-- The seconds of each GPU unit-hour that no sample covers, and how many of them no run holds
-- while the GPU has a failure signal (DESIGN.md, "From samples to seconds"): a scheduler node
-- event that marks the node down or failed, or another GPU of the same node still reporting
-- (a non-fatal sample covers it: the GPU fell off the bus). Fatal-XID coverage is counted as
-- down in int_gpu_hour_telemetry, not here. Unheld seconds without a signal are a telemetry gap
-- (the node was not observed), never downtime.
with

units as (

    -- every unit a GPU has in some hour (its layout per hour: int_gpu_units)
    select distinct units.gpu_uuid, units.mig_instance, gpus.host
    from {{ ref('int_gpu_units') }} as units
    inner join {{ ref('int_gpus') }} as gpus
        on gpus.gpu_uuid = units.gpu_uuid

),

hours as (

    select * from {{ ref('int_hours') }}

),

window_bounds as (

    select min(hour_epoch) as t_start, max(hour_epoch) + 3600 as t_end from hours

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

spans as (

    -- the coverage, as spans of contiguous sample intervals (int_gpu_coverage_spans): the
    -- same starts and ends as the intervals, a few rows per unit and day
    select * from {{ ref('int_gpu_coverage_spans') }}

),

intervals as (

    select
        spans.gpu_uuid,
        spans.mig_instance,
        greatest(spans.span_from, window_bounds.t_start) as valid_from,
        least(spans.span_to, window_bounds.t_end) as valid_to
    from spans
    cross join window_bounds
    where spans.span_to > window_bounds.t_start
        and spans.span_from < window_bounds.t_end

),

ordered as (

    select
        intervals.*,
        lag(valid_to) over (partition by gpu_uuid, mig_instance order by valid_from) as prev_to,
        lead(valid_from) over (partition by gpu_uuid, mig_instance order by valid_from) as next_from
    from intervals

),

raw_gaps as (

    -- before the first sample, between samples, after the last one
    select gpu_uuid, mig_instance, coalesce(prev_to, window_bounds.t_start) as gap_from,
        valid_from as gap_to
    from ordered
    cross join window_bounds
    where prev_to is null or valid_from > prev_to
    union all
    select gpu_uuid, mig_instance, valid_to as gap_from, window_bounds.t_end as gap_to
    from ordered
    cross join window_bounds
    where next_from is null
    union all
    -- units that never reported in the window
    select units.gpu_uuid, units.mig_instance, window_bounds.t_start, window_bounds.t_end
    from units
    cross join window_bounds
    where not exists (
        select 1 from intervals
        where intervals.gpu_uuid = units.gpu_uuid and intervals.mig_instance = units.mig_instance
    )

),

gaps as (

    select raw_gaps.*, units.host
    from raw_gaps
    inner join units
        on units.gpu_uuid = raw_gaps.gpu_uuid and units.mig_instance = raw_gaps.mig_instance
    where raw_gaps.gap_to > raw_gaps.gap_from

),

gap_pieces as (

    select
        gaps.gpu_uuid,
        gaps.mig_instance,
        gaps.host,
        hours.hour_epoch,
        greatest(gaps.gap_from, hours.hour_epoch) as piece_from,
        least(gaps.gap_to, hours.hour_epoch + 3600) as piece_to
    from gaps
    inner join offsets
        on {{ spread_join('gaps.gap_from', 'gaps.gap_to') }}
    inner join hours
        on hours.hour_epoch = {{ spread_period_start('gaps.gap_from') }}

),

gap_hosts as (

    select distinct host, hour_epoch from gap_pieces

),

node_events as (

    select
        events.node as host,
        {{ to_epoch('events.started_at') }} as e_from,
        coalesce({{ to_epoch('events.ended_at') }}, window_bounds.t_end) as e_to
    from {{ ref('stg_slurm__node_events') }} as events
    cross join window_bounds
    where events.is_outage

),

signals as (

    -- what says the node was there but the GPU failed, in the hours with gaps
    -- (a non-fatal sample of any unit of the node: its spans, cut at the hours with gaps)
    select
        spans.host,
        gap_hosts.hour_epoch,
        greatest(spans.span_from, gap_hosts.hour_epoch) as s_from,
        least(spans.span_to, gap_hosts.hour_epoch + 3600) as s_to
    from spans
    inner join offsets
        on {{ spread_join('spans.span_from', 'spans.span_to') }}
    inner join gap_hosts
        on gap_hosts.host = spans.host
        and gap_hosts.hour_epoch = {{ spread_period_start('spans.span_from') }}
    where not spans.is_fatal_xid
    union all
    select
        gap_hosts.host,
        gap_hosts.hour_epoch,
        greatest(node_events.e_from, gap_hosts.hour_epoch),
        least(node_events.e_to, gap_hosts.hour_epoch + 3600)
    from node_events
    inner join gap_hosts
        on gap_hosts.host = node_events.host
        and node_events.e_from < gap_hosts.hour_epoch + 3600
        and node_events.e_to > gap_hosts.hour_epoch

),

signal_runs as (

    select
        signals.*,
        max(s_to) over (
            partition by host, hour_epoch order by s_from, s_to
            rows between unbounded preceding and 1 preceding
        ) as prev_max_to
    from signals

),

islands_numbered as (

    select
        signal_runs.*,
        sum(case when prev_max_to is null or s_from > prev_max_to then 1 else 0 end) over (
            partition by host, hour_epoch order by s_from, s_to rows unbounded preceding
        ) as island
    from signal_runs

),

islands as (

    select host, hour_epoch, island, min(s_from) as i_from, max(s_to) as i_to
    from islands_numbered
    group by host, hour_epoch, island

),

signalled as (

    -- the parts of each gap during which the GPU had a failure signal
    select
        gap_pieces.gpu_uuid,
        gap_pieces.mig_instance,
        gap_pieces.hour_epoch,
        greatest(gap_pieces.piece_from, islands.i_from) as d_from,
        least(gap_pieces.piece_to, islands.i_to) as d_to
    from gap_pieces
    inner join islands
        on islands.host = gap_pieces.host
        and islands.hour_epoch = gap_pieces.hour_epoch
        and islands.i_from < gap_pieces.piece_to
        and islands.i_to > gap_pieces.piece_from

),

held_in_signalled as (

    select
        signalled.gpu_uuid,
        signalled.mig_instance,
        signalled.hour_epoch,
        sum(
            segments.share
            * (least(signalled.d_to, segments.seg_to) - greatest(signalled.d_from, segments.seg_from))
        ) as held_seconds
    from signalled
    inner join {{ ref('int_run_gpu_holding_segments') }} as segments
        on segments.gpu_uuid = signalled.gpu_uuid
        and segments.mig_instance = signalled.mig_instance
        and segments.seg_from < signalled.d_to
        and segments.seg_to > signalled.d_from
    group by signalled.gpu_uuid, signalled.mig_instance, signalled.hour_epoch

),

signalled_hours as (

    select gpu_uuid, mig_instance, hour_epoch, sum(d_to - d_from) as signalled_seconds
    from signalled
    group by gpu_uuid, mig_instance, hour_epoch

),

gap_hours as (

    select gpu_uuid, mig_instance, hour_epoch, sum(piece_to - piece_from) as gap_seconds
    from gap_pieces
    group by gpu_uuid, mig_instance, hour_epoch

),

final as (

    select
        gap_hours.gpu_uuid,
        gap_hours.mig_instance,
        gap_hours.hour_epoch,
        gap_hours.gap_seconds,
        coalesce(signalled_hours.signalled_seconds, 0)
            - coalesce(held_in_signalled.held_seconds, 0) as unheld_signalled_seconds
    from gap_hours
    left join signalled_hours
        on signalled_hours.gpu_uuid = gap_hours.gpu_uuid
        and signalled_hours.mig_instance = gap_hours.mig_instance
        and signalled_hours.hour_epoch = gap_hours.hour_epoch
    left join held_in_signalled
        on held_in_signalled.gpu_uuid = gap_hours.gpu_uuid
        and held_in_signalled.mig_instance = gap_hours.mig_instance
        and held_in_signalled.hour_epoch = gap_hours.hour_epoch

)

select * from final
