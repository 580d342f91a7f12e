-- Which run held which GPU when, in DESIGN.md's order of evidence:
--   1. `hpc_job` labels on DCGM samples (= Slurm JobIDRaw), on the run's hosts, within the
--      run's [start, end) (job ids repeat across clusters, hosts do not);
--   2. Kubernetes `namespace` + `pod` labels (+ node), within the pod's life;
--   3. GPU indices the scheduler reports (`IDX:` of old-style GRES strings), on each host;
--   4. otherwise the run holds gpus_per_node / node GPUs of each of its nodes' GPUs: `exact`
--      when that is the whole node, else `estimated` (`evidence` = 'node'). That nominal share
--      becomes, moment by moment, a share of only the GPUs better evidence leaves free in
--      int_run_gpu_holding_segments. A Slurm run of k MIG instances of one profile per node
--      (`gres/gpu:1g.10gb=1`) holds k / m of each of the m instances of that profile its node
--      reports (`evidence` = 'mig', `pool` = the profile); when the node reports none, its
--      GPU equivalents (slices / 7) are spread over the node's GPUs as in 4.
-- `pool` / `pool_units`: the units a node-level holding shares ('' and the node's GPUs, or a
-- MIG profile and the node's instances of it).
-- A held interval is the run's [started_at, ended_at or the end of the window), cut to the GPU's
-- time in its slot (int_gpus' tenure, when a board was replaced). Labels on a MIG
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

mig_instances as (

    -- the MIG instances of each profile on each host, as DCGM reports them in any hour of the
    -- window (int_gpu_units is per hour: a layout change adds the new instances to the pool)
    select distinct
        gpus.host,
        units.gpu_uuid,
        units.mig_instance,
        units.mig_profile
    from {{ ref('int_gpu_units') }} as units
    inner join gpus
        on gpus.gpu_uuid = units.gpu_uuid
    where units.mig_instance <> ''

),

mig_units as (

    select
        mig_instances.*,
        count(*) over (partition by host, mig_profile) as pool_units
    from mig_instances

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

-- one row per run and host of its window
run_window_hosts as (

    select
        run_windows.*,
        {{ explode_list('run_windows.hosts') }} as run_host
    from run_windows

),

label_days as (

    select * from {{ ref('int_gpu_label_days') }}

),

slurm_label_days as (

    -- the label days of the run's job id on the run's own hosts (job ids repeat across
    -- clusters: only the run's own hosts are its evidence) that reach into its window
    select
        run_windows.run_id,
        run_windows.t_from,
        run_windows.t_to,
        label_days.*
    from run_windows
    inner join label_days
        on label_days.hpc_job = run_windows.job_id_raw
        and {{ list_has('run_windows.hosts', 'label_days.host') }}
        and label_days.last_t >= run_windows.t_from
        and label_days.first_t < run_windows.t_to
    where run_windows.scheduler = 'slurm'

),

k8s_label_days as (

    select
        run_windows.run_id,
        run_windows.t_from,
        run_windows.t_to,
        label_days.*
    from run_windows
    inner join label_days
        on label_days.k8s_namespace = run_windows.k8s_namespace
        and label_days.k8s_pod = run_windows.pod_name
        and {{ list_has('run_windows.hosts', 'label_days.host') }}
        and label_days.last_t >= run_windows.t_from
        and label_days.first_t < run_windows.t_to
    where run_windows.scheduler = 'kubernetes'

),

reaching as (

    select * from slurm_label_days
    union all
    select * from k8s_label_days

),

evidence as (

    -- a run holds a unit whose samples carry its label within its window: a label day inside
    -- the window is evidence whole; one the window cuts through, by its samples in the window
    select run_id, gpu_uuid, mig_instance
    from reaching
    where first_t >= t_from and last_t < t_to
    union
    select reaching.run_id, labels.gpu_uuid, labels.mig_instance
    from reaching
    inner join labels
        on labels.gpu_uuid = reaching.gpu_uuid
        and labels.mig_instance = reaching.mig_instance
        and labels.day_epoch = reaching.day_epoch
        and labels.host = reaching.host
        and coalesce(labels.hpc_job, '') = coalesce(reaching.hpc_job, '')
        and coalesce(labels.k8s_namespace, '') = coalesce(reaching.k8s_namespace, '')
        and coalesce(labels.k8s_pod, '') = coalesce(reaching.k8s_pod, '')
        and labels.t >= reaching.t_from
        and labels.t < reaching.t_to
    where not (reaching.first_t >= reaching.t_from and reaching.last_t < reaching.t_to)

),

indexed as (

    select distinct
        run_windows.run_id,
        gpus.gpu_uuid,
        '' as mig_instance
    from run_window_hosts as run_windows
    inner join gpus
        on gpus.host = run_windows.run_host
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
        cast(null as double) as node_gpus,
        cast(null as string) as pool,
        cast(null as bigint) as pool_units
    from evidence
    union all
    select
        indexed.run_id,
        indexed.gpu_uuid,
        indexed.mig_instance,
        1.0 as share,
        'exact' as mapping,
        'index' as evidence,
        cast(null as double) as node_gpus,
        cast(null as string) as pool,
        cast(null as bigint) as pool_units
    from indexed

),

unmapped as (

    -- runs neither labels nor indices map, on each of their hosts
    select
        run_windows.run_id,
        run_windows.mig_profile,
        cast(run_windows.gpu_equivalents as double) / run_windows.node_count as node_equivalents,
        -- MIG instances per node: slices / the profile's slices
        cast(run_windows.mig_slices as double) / run_windows.node_count
            / nullif(
                cast({{ regex_extract('run_windows.mig_profile', "'^([0-9]+)g'") }} as double), 0
            ) as node_instances,
        run_windows.run_host as host
    from run_window_hosts as run_windows
    where
        run_windows.run_id not in (select run_id from evidence)
        and run_windows.run_id not in (select run_id from indexed)

),

by_mig as (

    -- a MIG run: k of the m instances of its profile on its node
    select
        unmapped.run_id,
        mig_units.gpu_uuid,
        mig_units.mig_instance,
        least(1.0, unmapped.node_instances / mig_units.pool_units) as share,
        case
            when unmapped.node_instances >= mig_units.pool_units then 'exact'
            else 'estimated'
        end as mapping,
        'mig' as evidence,
        unmapped.node_instances as node_gpus,
        unmapped.mig_profile as pool,
        mig_units.pool_units
    from unmapped
    inner join mig_units
        on mig_units.host = unmapped.host and mig_units.mig_profile = unmapped.mig_profile
    where unmapped.node_instances > 0

),

by_node as (

    -- whole GPUs (and MIG runs whose node reports no instance of their profile: their GPU
    -- equivalents)
    select
        unmapped.run_id,
        gpus.gpu_uuid,
        '' as mig_instance,
        least(1.0, unmapped.node_equivalents / gpus.gpus_per_node) as share,
        case
            when unmapped.node_equivalents >= gpus.gpus_per_node then 'exact'
            else 'estimated'
        end as mapping,
        'node' as evidence,
        unmapped.node_equivalents as node_gpus,
        '' as pool,
        cast(gpus.gpus_per_node as bigint) as pool_units
    from unmapped
    inner join gpus
        on gpus.host = unmapped.host
    where
        unmapped.node_equivalents > 0
        and not exists (
            select 1
            from mig_units
            where
                mig_units.host = unmapped.host
                and mig_units.mig_profile = unmapped.mig_profile
                and unmapped.node_instances > 0
        )

),

holdings as (

    select * from labelled
    union all
    select * from by_mig
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
        holdings.pool,
        holdings.pool_units,
        -- within the window, and within the GPU's time in its slot (int_gpus: a replaced
        -- board holds nothing after its successor arrives, the successor nothing before)
        greatest(
            run_windows.t_from,
            window_bounds.t_start,
            coalesce(gpus.tenure_from, window_bounds.t_start)
        ) as held_from,
        least(
            run_windows.t_to,
            window_bounds.t_end,
            coalesce(gpus.tenure_to, window_bounds.t_end)
        ) as held_to
    from holdings
    inner join run_windows
        on run_windows.run_id = holdings.run_id
    left join gpus
        on gpus.gpu_uuid = holdings.gpu_uuid
    cross join window_bounds

)

select * from final where held_to > held_from
