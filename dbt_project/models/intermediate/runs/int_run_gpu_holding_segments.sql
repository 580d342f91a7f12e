-- Who holds each GPU unit, and how much of it, in each stretch of time during which no holding
-- on its node starts or ends (DESIGN.md, "Run <-> GPU mapping", rule 4):
--   label / index evidence (`exact`): the run holds the unit; runs holding one unit at once
--     (time-sliced or MPS GPUs) split it equally;
--   node-level (`evidence` = 'node'): a run holding k GPUs of a node holds k / m of each of the m
--     GPUs that exact evidence leaves free at that moment (m = the node's GPUs while nothing
--     exact is on it), k / K when the node-level runs together ask for K > m GPUs.
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

    -- GPUs that exact evidence holds in a segment
    select distinct host, seg_from, gpu_uuid
    from active
    where evidence <> 'node'

),

node_demand as (

    select
        host,
        seg_from,
        max(gpus_per_node) as gpus_per_node,
        sum(node_gpus) as asked
    from (
        select distinct host, seg_from, run_id, gpus_per_node, node_gpus
        from active
        where evidence = 'node'
    ) as node_runs
    group by host, seg_from

),

free_gpus as (

    select
        node_demand.host,
        node_demand.seg_from,
        node_demand.asked,
        node_demand.gpus_per_node - coalesce(count(taken.gpu_uuid), 0) as free
    from node_demand
    left join taken
        on taken.host = node_demand.host and taken.seg_from = node_demand.seg_from
    group by node_demand.host, node_demand.seg_from, node_demand.asked, node_demand.gpus_per_node

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
    where evidence <> 'node'

),

node_segments as (

    select
        active.run_id,
        active.gpu_uuid,
        active.mig_instance,
        active.host,
        case
            when free_gpus.free < active.gpus_per_node then 'estimated'
            else active.mapping
        end as mapping,
        active.seg_from,
        active.seg_to,
        active.node_gpus / greatest(free_gpus.free, free_gpus.asked) as share
    from active
    inner join free_gpus
        on free_gpus.host = active.host and free_gpus.seg_from = active.seg_from
    left join taken
        on taken.host = active.host
        and taken.seg_from = active.seg_from
        and taken.gpu_uuid = active.gpu_uuid
    where active.evidence = 'node' and taken.gpu_uuid is null and free_gpus.free > 0

),

final as (

    select * from exact_segments
    union all
    select * from node_segments

)

select * from final
