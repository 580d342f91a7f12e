-- Seconds each run held each GPU unit in each hour, by state. Covered seconds take the state of
-- the covering sample (fatal XID -> down; utilisation >= threshold -> busy; else allocated
-- idle); held seconds no sample covers count as busy and as unobserved. Scaled by the run's
-- share: k/n for `estimated` holdings, and 1 / (number of runs holding the unit at the same
-- time) for labelled holdings (time-sliced or MPS GPUs split held seconds equally).
with

holdings as (

    select * from {{ ref('int_run_gpu_holdings') }}

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

pieces as (

    select * from {{ ref('int_sample_pieces') }}

),

bounds as (

    select gpu_uuid, mig_instance, held_from as b from holdings
    union
    select gpu_uuid, mig_instance, held_to as b from holdings

),

segments as (

    select
        gpu_uuid,
        mig_instance,
        b as seg_from,
        lead(b) over (partition by gpu_uuid, mig_instance order by b) as seg_to
    from bounds

),

holding_segments as (

    select
        holdings.run_id,
        holdings.gpu_uuid,
        holdings.mig_instance,
        holdings.mapping,
        segments.seg_from,
        segments.seg_to,
        case
            when holdings.mapping = 'exact'
                then holdings.share / count(*) over (
                    partition by holdings.gpu_uuid, holdings.mig_instance, holdings.mapping,
                    segments.seg_from
                )
            else holdings.share
        end as share
    from holdings
    inner join segments
        on segments.gpu_uuid = holdings.gpu_uuid
        and segments.mig_instance = holdings.mig_instance
        and segments.seg_from >= holdings.held_from
        and segments.seg_to <= holdings.held_to
    where segments.seg_to is not null

),

holding_hours as (

    select
        holding_segments.run_id,
        holding_segments.gpu_uuid,
        holding_segments.mig_instance,
        holding_segments.share,
        holding_segments.mapping,
        floor(holding_segments.seg_from / 3600) * 3600 + offsets.n * 3600 as hour_epoch,
        greatest(
            holding_segments.seg_from,
            floor(holding_segments.seg_from / 3600) * 3600 + offsets.n * 3600
        ) as hs,
        least(
            holding_segments.seg_to,
            floor(holding_segments.seg_from / 3600) * 3600 + offsets.n * 3600 + 3600
        ) as he
    from holding_segments
    inner join offsets
        on offsets.n <= floor((holding_segments.seg_to - 0.000001) / 3600)
            - floor(holding_segments.seg_from / 3600)

),

piece_overlaps as (

    select
        holding_hours.run_id,
        holding_hours.gpu_uuid,
        holding_hours.mig_instance,
        holding_hours.hour_epoch,
        holding_hours.hs,
        holding_hours.share,
        pieces.is_fatal_xid,
        -- exact mappings use the unit's own utilisation, estimated ones the node's mean
        case
            when holding_hours.mapping = 'estimated' then pieces.is_node_busy
            else pieces.is_busy
        end as is_busy,
        pieces.power_w,
        least(pieces.piece_end, holding_hours.he) - greatest(pieces.piece_start, holding_hours.hs)
            as seconds
    from holding_hours
    inner join pieces
        on pieces.gpu_uuid = holding_hours.gpu_uuid
        and pieces.mig_instance = holding_hours.mig_instance
        and pieces.hour_epoch = holding_hours.hour_epoch
        and pieces.piece_start < holding_hours.he
        and pieces.piece_end > holding_hours.hs

),

covered as (

    select
        run_id,
        gpu_uuid,
        mig_instance,
        hour_epoch,
        hs,
        sum(seconds) as covered_seconds,
        sum(case when is_fatal_xid then seconds else 0 end) as down_seconds,
        sum(case when is_busy then seconds else 0 end) as busy_covered_seconds,
        sum(case when not is_fatal_xid and not is_busy then seconds else 0 end)
            as allocated_idle_seconds,
        sum(coalesce(power_w, 0) * seconds) / 3600.0 as energy_wh
    from piece_overlaps
    group by run_id, gpu_uuid, mig_instance, hour_epoch, hs

),

per_segment_hour as (

    select
        holding_hours.run_id,
        holding_hours.gpu_uuid,
        holding_hours.mig_instance,
        holding_hours.hour_epoch,
        holding_hours.mapping,
        (holding_hours.he - holding_hours.hs) * holding_hours.share as held_seconds,
        (
            coalesce(covered.busy_covered_seconds, 0)
            + (holding_hours.he - holding_hours.hs) - coalesce(covered.covered_seconds, 0)
        ) * holding_hours.share as busy_seconds,
        coalesce(covered.allocated_idle_seconds, 0) * holding_hours.share
            as allocated_idle_seconds,
        coalesce(covered.down_seconds, 0) * holding_hours.share as down_seconds,
        ((holding_hours.he - holding_hours.hs) - coalesce(covered.covered_seconds, 0))
            * holding_hours.share as unobserved_seconds,
        coalesce(covered.energy_wh, 0) * holding_hours.share as energy_wh
    from holding_hours
    left join covered
        on covered.run_id = holding_hours.run_id
        and covered.gpu_uuid = holding_hours.gpu_uuid
        and covered.mig_instance = holding_hours.mig_instance
        and covered.hour_epoch = holding_hours.hour_epoch
        and covered.hs = holding_hours.hs

),

final as (

    select
        run_id,
        gpu_uuid,
        mig_instance,
        hour_epoch,
        max(mapping) as mapping,
        sum(held_seconds) as held_seconds,
        sum(busy_seconds) as busy_seconds,
        sum(allocated_idle_seconds) as allocated_idle_seconds,
        sum(down_seconds) as down_seconds,
        sum(unobserved_seconds) as unobserved_seconds,
        sum(energy_wh) as energy_wh
    from per_segment_hour
    group by run_id, gpu_uuid, mig_instance, hour_epoch

)

select * from final
