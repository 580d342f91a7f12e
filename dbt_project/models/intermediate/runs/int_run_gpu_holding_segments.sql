-- Who holds each GPU unit, and how much of it, in each stretch of time during which no holding
-- on its node starts or ends (DESIGN.md, "Run <-> GPU mapping", rule 4):
--   label / index evidence (`exact`): the run holds the unit; runs holding one unit at once
--     (time-sliced or MPS GPUs) split it equally;
--   node-level (`evidence` = 'node'): a run holding k GPUs of a node holds k / m of each of the m
--     GPUs that exact evidence leaves free at that moment (m = the node's GPUs while nothing
--     exact is on it), k / K when the node-level runs together ask for K > m GPUs;
--   MIG node-level (`evidence` = 'mig'): the same within the node's instances of one profile
--     (`pool`): k instances of the m instances exact evidence leaves free.
-- So the holding fractions of one GPU-second never sum above 1 (assert_gpu_seconds_held_at_most_once).
with

holdings as (

    select
        holdings.*,
        gpus.host,
        gpus.gpus_per_node
    from {{ ref('int_run_gpu_holdings') }} as holdings
    inner join {{ ref('int_gpus') }} as gpus
        on gpus.gpu_uuid = holdings.gpu_uuid

),

bounds as (

    select host, held_from as b from holdings
    union
    select host, held_to as b from holdings

),

segments as (

    select
        host,
        b as seg_from,
        lead(b) over (partition by host order by b) as seg_to
    from bounds

),

active as (

    select
        holdings.*,
        segments.seg_from,
        segments.seg_to
    from holdings
    inner join segments
        on segments.host = holdings.host
        and segments.seg_from >= holdings.held_from
        and segments.seg_to <= holdings.held_to
    where segments.seg_to is not null

),

taken as (

    -- units that exact evidence holds in a segment: the GPU (for the whole-GPU pool: a GPU
    -- with one labelled MIG instance is taken) and the instance itself (for MIG pools)
    select distinct host, seg_from, gpu_uuid as unit_key
    from active
    where evidence not in ('node', 'mig')
    union
    select distinct host, seg_from, gpu_uuid || '/' || mig_instance as unit_key
    from active
    where evidence not in ('node', 'mig')

),

pooled as (

    -- node-level holdings, keyed by the unit they share within their pool
    select
        active.*,
        case
            when active.evidence = 'mig' then active.gpu_uuid || '/' || active.mig_instance
            else active.gpu_uuid
        end as unit_key
    from active
    where active.evidence in ('node', 'mig')

),

node_demand as (

    select
        host,
        seg_from,
        pool,
        max(pool_units) as pool_units,
        sum(node_gpus) as asked
    from (
        select distinct host, seg_from, pool, run_id, pool_units, node_gpus
        from pooled
    ) as node_runs
    group by host, seg_from, pool

),

pool_taken as (

    select distinct pooled.host, pooled.seg_from, pooled.pool, pooled.unit_key
    from pooled
    inner join taken
        on taken.host = pooled.host
        and taken.seg_from = pooled.seg_from
        and taken.unit_key = pooled.unit_key

),

free_units as (

    select
        node_demand.host,
        node_demand.seg_from,
        node_demand.pool,
        node_demand.asked,
        node_demand.pool_units,
        node_demand.pool_units - coalesce(count(pool_taken.unit_key), 0) as free
    from node_demand
    left join pool_taken
        on pool_taken.host = node_demand.host
        and pool_taken.seg_from = node_demand.seg_from
        and pool_taken.pool = node_demand.pool
    group by
        node_demand.host,
        node_demand.seg_from,
        node_demand.pool,
        node_demand.asked,
        node_demand.pool_units

),

exact_segments as (

    select
        run_id,
        gpu_uuid,
        mig_instance,
        host,
        mapping,
        seg_from,
        seg_to,
        share / count(*) over (partition by gpu_uuid, mig_instance, seg_from) as share
    from active
    where evidence not in ('node', 'mig')

),

node_segments as (

    select
        pooled.run_id,
        pooled.gpu_uuid,
        pooled.mig_instance,
        pooled.host,
        case
            when free_units.free < free_units.pool_units then 'estimated'
            else pooled.mapping
        end as mapping,
        pooled.seg_from,
        pooled.seg_to,
        pooled.node_gpus / greatest(free_units.free, free_units.asked) as share
    from pooled
    inner join free_units
        on free_units.host = pooled.host
        and free_units.seg_from = pooled.seg_from
        and free_units.pool = pooled.pool
    left join pool_taken
        on pool_taken.host = pooled.host
        and pool_taken.seg_from = pooled.seg_from
        and pool_taken.pool = pooled.pool
        and pool_taken.unit_key = pooled.unit_key
    where pool_taken.unit_key is null and free_units.free > 0

),

final as (

    select * from exact_segments
    union all
    select * from node_segments

)

select * from final
