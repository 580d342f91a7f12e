-- Seconds each run held each GPU unit in each hour, by state. Covered seconds take the state of
-- the covering sample (fatal XID -> down; utilisation >= threshold -> busy; else allocated
-- idle); held seconds no sample covers count as busy and as unobserved. Scaled by the run's
-- share of the unit in each stretch of time (int_run_gpu_holding_segments: k/m of the free GPUs
-- for node-level holdings, 1 / (runs holding the unit at once) for labelled ones).
-- Stored by day (the day of the hour): a run recomputes the hours of the days of its range from
-- the stored pieces of those days (macros/incremental.sql; docs/operations.md).
{{ incremental_by_day() }}
with

holding_segments as (

    -- with the unit's key, which the pieces carry (none for a unit never sampled)
    select segments.*, unit_keys.unit_key
    from {{ ref('int_run_gpu_holding_segments') }} as segments
    left join {{ ref('int_gpu_unit_keys') }} as unit_keys
        on unit_keys.gpu_uuid = segments.gpu_uuid
        and unit_keys.mig_instance = segments.mig_instance
    where segments.seg_to > {{ first_recomputed_epoch() }}
        and segments.seg_from < {{ after_recomputed_epoch() }}

),

offsets as (

    select * from {{ ref('int_hour_offsets') }}

),

pieces as (

    select * from {{ ref('int_sample_pieces') }}
    where {{ in_recomputed_days('day_epoch') }}

),

holding_hours as (

    select
        holding_segments.run_id,
        holding_segments.gpu_uuid,
        holding_segments.mig_instance,
        holding_segments.unit_key,
        holding_segments.share,
        holding_segments.mapping,
        {{ spread_period_start('holding_segments.seg_from') }} as hour_epoch,
        greatest(
            holding_segments.seg_from,
            {{ spread_period_start('holding_segments.seg_from') }}
        ) as hs,
        least(
            holding_segments.seg_to,
            {{ spread_period_start('holding_segments.seg_from') }} + 3600
        ) as he
    from holding_segments
    inner join offsets
        on {{ spread_join('holding_segments.seg_from', 'holding_segments.seg_to') }}
    where {{ in_recomputed_days(
        'floor((' ~ spread_period_start('holding_segments.seg_from') ~ ') / 86400) * 86400'
    ) }}

),

held_pieces as (

    select
        holding_hours.run_id,
        holding_hours.gpu_uuid,
        holding_hours.mig_instance,
        holding_hours.hour_epoch,
        holding_hours.hs,
        holding_hours.share,
        holding_hours.mapping,
        pieces.host,
        pieces.t,
        pieces.utilization,
        pieces.is_fatal_xid,
        pieces.is_busy,
        pieces.power_w,
        least(pieces.piece_end, holding_hours.he) - greatest(pieces.piece_start, holding_hours.hs)
            as seconds
    from holding_hours
    inner join pieces
        on pieces.unit_key = holding_hours.unit_key
        and pieces.hour_epoch = holding_hours.hour_epoch
        and pieces.piece_start < holding_hours.he
        and pieces.piece_end > holding_hours.hs

),

estimated_scrapes as (

    -- the scrapes whose samples cover what runs mapped `estimated` hold
    select distinct host, t
    from held_pieces
    where mapping = 'estimated' and not is_fatal_xid

),

node_means as (

    -- the signal of runs mapped `estimated`: the mean utilisation, at each of those scrapes, of
    -- the node's GPUs that better evidence leaves free (no job or pod label on the sample).
    -- Only at those scrapes, and only between the first and the last of them: DuckDB skips
    -- every stored day outside (no scrape: nothing, so a fleet whose exporter labels every
    -- job reads no sample here; a bound of null would leave the whole history to be read)
    select
        samples.host,
        samples.t,
        avg(samples.utilization) as node_mean_utilization
    from {{ ref('int_gpu_samples') }} as samples
    inner join estimated_scrapes
        on estimated_scrapes.host = samples.host
        and estimated_scrapes.t = samples.t
    where samples.mig_instance = '' and not samples.is_labelled
        and samples.t >= coalesce((select min(t) from estimated_scrapes), 1e18)
        and samples.t <= coalesce((select max(t) from estimated_scrapes), -1e18)
    group by samples.host, samples.t

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

settings as (

    select * from {{ ref('stg_config__settings') }}

),

piece_overlaps as (

    -- exact mappings: the unit's own utilisation
    select
        run_id, gpu_uuid, mig_instance, hour_epoch, hs, share, is_fatal_xid, is_busy, power_w,
        seconds
    from held_pieces
    where mapping <> 'estimated'
    union all
    -- estimated ones: the node's mean (a scrape without free GPUs: the unit's own)
    select
        held_pieces.run_id,
        held_pieces.gpu_uuid,
        held_pieces.mig_instance,
        held_pieces.hour_epoch,
        held_pieces.hs,
        held_pieces.share,
        held_pieces.is_fatal_xid,
        not held_pieces.is_fatal_xid
            and coalesce(
                coalesce(node_means.node_mean_utilization, held_pieces.utilization)
                >= settings.idle_threshold,
                true
            ) as is_busy,
        held_pieces.power_w,
        held_pieces.seconds
    from held_pieces
    left join node_means
        on node_means.host = held_pieces.host
        and node_means.t = held_pieces.t
    left join gpus
        on gpus.gpu_uuid = held_pieces.gpu_uuid
    left join settings
        on settings.site = gpus.site
    where held_pieces.mapping = 'estimated'

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
        sum(coalesce(power_w, 0) * seconds) / 3600 as energy_wh
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
        sum(energy_wh) as energy_wh,
        floor(hour_epoch / 86400) * 86400 as day_epoch
    from per_segment_hour
    group by run_id, gpu_uuid, mig_instance, hour_epoch

)

select * from final
