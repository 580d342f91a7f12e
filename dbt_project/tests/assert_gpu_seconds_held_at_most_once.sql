-- The holding fractions of one GPU-second never sum above 1 (DESIGN.md, "Run <-> GPU mapping"):
-- labelled runs split a unit they share, node-level (estimated) runs share only the GPUs that
-- exact evidence leaves free. Segments are cut at every holding boundary on the node, so the
-- fractions are constant inside each.
select
    gpu_uuid,
    mig_instance,
    seg_from,
    sum(share) as held_fraction
from {{ ref('int_run_gpu_holding_segments') }}
group by gpu_uuid, mig_instance, seg_from
having sum(share) > 1.000001
