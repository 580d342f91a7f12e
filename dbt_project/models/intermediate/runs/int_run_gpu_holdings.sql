-- Which run held which GPU when, in DESIGN.md's order of evidence:
--   1. `hpc_job` labels on DCGM samples (= Slurm JobIDRaw), on the run's hosts, within the
--      run's [start, end) (job ids repeat across clusters, hosts do not);
--   2. Kubernetes `namespace` + `pod` labels (+ node), within the pod's life;
--   3. GPU indices the scheduler reports (`IDX:` of old-style GRES strings), on each host;
--   4. otherwise the run holds gpus_per_node / node GPUs of each of its nodes' GPUs: `exact`
--      when that is the whole node, else `estimated` (`evidence` = 'node'). That nominal share
--      becomes, moment by moment, a share of only the GPUs better evidence leaves free in
--      int_run_gpu_holding_segments.
-- A held interval is the run's [started_at, ended_at or the end of the window). Labels on a MIG
-- instance's samples map the run to that instance (`mig_instance`); '' is the whole GPU.
with

runs as (

    select * from {{ ref('int_runs') }}
    where started_at is not null and gpu_equivalents > 0

),

labels as (

    select * from {{ ref('int_gpu_sample_labels') }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

window_bounds as (

    select min(hour_epoch) as t_start, max(hour_epoch) + 3600 as t_end
    from {{ ref('int_hours') }}

),

run_windows as (

    select
        runs.*,
        {{ to_epoch('runs.started_at') }} as t_from,
        coalesce({{ to_epoch('runs.ended_at') }}, window_bounds.t_end) as t_to
    from runs
    cross join window_bounds

),

slurm_evidence as (

    select distinct
        run_windows.run_id,
        labels.gpu_uuid,
        labels.mig_instance
    from run_windows
    inner join labels
        on labels.hpc_job = run_windows.job_id_raw
        -- job ids repeat across clusters: only the run's own hosts are its evidence
        and {{ list_has('run_windows.hosts', 'labels.host') }}
        and labels.t >= run_windows.t_from
        and labels.t < run_windows.t_to
    where run_windows.scheduler = 'slurm'

),

k8s_evidence as (

    select distinct
        run_windows.run_id,
        labels.gpu_uuid,
        labels.mig_instance
    from run_windows
    inner join labels
        on labels.k8s_namespace = run_windows.k8s_namespace
        and labels.k8s_pod = run_windows.pod_name
        and {{ list_has('run_windows.hosts', 'labels.host') }}
        and labels.t >= run_windows.t_from
        and labels.t < run_windows.t_to
    where run_windows.scheduler = 'kubernetes'

),

evidence as (

    select * from slurm_evidence
    union all
    select * from k8s_evidence

),

indexed as (

    select distinct
        run_windows.run_id,
        gpus.gpu_uuid,
        '' as mig_instance
    from run_windows
    cross join {{ unnest_list('run_windows.hosts', 'host') }}
    inner join gpus
        on gpus.host = u.host
        and {{ list_has('run_windows.gpu_indices', 'gpus.gpu_index') }}
    where
        run_windows.scheduler = 'slurm'
        and run_windows.run_id not in (select run_id from evidence)

),

labelled as (

    select
        evidence.run_id,
        evidence.gpu_uuid,
        evidence.mig_instance,
        1.0 as share,
        'exact' as mapping,
        'label' as evidence,
        cast(null as double) as node_gpus
    from evidence
    union all
    select
        indexed.run_id,
        indexed.gpu_uuid,
        indexed.mig_instance,
        1.0 as share,
        'exact' as mapping,
        'index' as evidence,
        cast(null as double) as node_gpus
    from indexed

),

by_node as (

    select
        run_windows.run_id,
        gpus.gpu_uuid,
        '' as mig_instance,
        least(
            1.0,
            (run_windows.gpus * 1.0 / run_windows.node_count) / gpus.gpus_per_node
        ) as share,
        case
            when run_windows.gpus * 1.0 / run_windows.node_count >= gpus.gpus_per_node
                then 'exact'
            else 'estimated'
        end as mapping,
        'node' as evidence,
        run_windows.gpus * 1.0 / run_windows.node_count as node_gpus
    from run_windows
    cross join {{ unnest_list('run_windows.hosts', 'host') }}
    inner join gpus
        on gpus.host = u.host
    where
        run_windows.run_id not in (select run_id from evidence)
        and run_windows.run_id not in (select run_id from indexed)

),

holdings as (

    select * from labelled
    union all
    select * from by_node

),

final as (

    select
        holdings.run_id,
        holdings.gpu_uuid,
        holdings.mig_instance,
        holdings.share,
        holdings.mapping,
        holdings.evidence,
        holdings.node_gpus,
        greatest(run_windows.t_from, window_bounds.t_start) as held_from,
        least(run_windows.t_to, window_bounds.t_end) as held_to
    from holdings
    inner join run_windows
        on run_windows.run_id = holdings.run_id
    cross join window_bounds

)

select * from final where held_to > held_from
