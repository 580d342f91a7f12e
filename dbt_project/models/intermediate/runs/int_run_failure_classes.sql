-- Why each run failed, if it did (docs/metrics.md, fct_runs `failure_class`): `infra` when the
-- scheduler says the node failed, the boot failed or the run was preempted, or when a GPU the
-- run held reported a fatal XID while it held it; `user` when the job failed, ran out of memory
-- or time, was cancelled after it started, or exited non-zero; null otherwise.
with

runs as (

    select * from {{ ref('int_runs') }}

),

fatal_xid_runs as (

    select distinct holdings.run_id
    from {{ ref('int_run_gpu_holdings') }} as holdings
    inner join {{ ref('int_gpu_samples') }} as samples
        on samples.gpu_uuid = holdings.gpu_uuid
        and samples.is_fatal_xid
        and samples.t >= holdings.held_from
        and samples.t <= holdings.held_to

),

final as (

    select
        runs.run_id,
        fatal_xid_runs.run_id is not null as has_fatal_xid,
        case
            when runs.state in ('NODE_FAIL', 'BOOT_FAIL', 'PREEMPTED') then 'infra'
            when fatal_xid_runs.run_id is not null then 'infra'
            when runs.state in ('FAILED', 'OUT_OF_MEMORY', 'TIMEOUT', 'Failed') then 'user'
            when runs.state = 'CANCELLED' and runs.started_at is not null then 'user'
            when coalesce(runs.exit_code, 0) <> 0 then 'user'
        end as failure_class
    from runs
    left join fatal_xid_runs
        on fatal_xid_runs.run_id = runs.run_id

)

select * from final
