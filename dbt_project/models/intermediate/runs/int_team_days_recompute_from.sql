-- The first hour the scheduler's allocation per run and day (int_run_allocated_days) and the
-- team days (fct_team_gpu_hours_daily) recompute in this run (one row; macros/incremental.sql):
-- int_gpu_hour_states' (int_gpu_hour_states_recompute_from: the team days sum the runs'
-- GPU-hour costs, which follow it), or the first day before it on which a run's allocation
-- differs from the one the last build read (int_run_allocation_inputs: a later sacct export
-- that ends a job an earlier one showed RUNNING, moves it to another account or withdraws it);
-- null for every hour. `reason` says which. Built before the two models and their tests, which
-- read it. A full build compares nothing (the last build's copy may have other columns).
-- Per changed run: a run whose team, GPU equivalents and start are the same in both versions
-- differs from the earlier of its two ends on (a running run is allocated to the end of the
-- window, so an end it gained changes its days from that end); any other change, or a run new
-- or gone, from its start.
-- depends_on: {{ ref('int_runs') }}
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_run_allocation_inputs') if execute else none %}
with

states_from as (

    select from_hour, reason from {{ ref('int_gpu_hour_states_recompute_from') }}

),

{%- if range_start is not none and built is not none %}

now_runs as (

    {{ run_allocation_inputs() }}

),

built_runs as (

    select * from {{ built }}

),

changed_versions as (

    select * from {{ changed_input_rows('now_runs', 'built_runs') }}

),

changed_runs as (

    select
        run_id,
        case
            when count(*) = 2
                and min(team) = max(team)
                and min(gpu_equivalents) = max(gpu_equivalents)
                and min(started_epoch) = max(started_epoch)
                then min(ended_epoch)
            else min(started_epoch)
        end as changed_from
    from changed_versions
    group by run_id

),

final as (

    {{ states_or_runs_choice('changed_runs') }}

)

{%- else %}

final as (

    {{ uncompared_choice('states_from') }}

)

{%- endif %}

select * from final
