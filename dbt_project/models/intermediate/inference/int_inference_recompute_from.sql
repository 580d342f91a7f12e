-- The first hour the inference run hours (int_inference_run_hours, int_inference_run_days and
-- the marts fct_inference_hourly, fct_inference_daily) recompute in this run (one row;
-- macros/incremental.sql): int_gpu_hour_states' (int_gpu_hour_states_recompute_from: the run
-- hours price the runs' GPU-hours, which follow it), or the first day before it on which an
-- inference run whose team, pod, life or served models differ from those the last build read
-- changed (int_inference_run_inputs: a pod snapshot that ends a server, a model a server began
-- to serve, which splits the GPU-hours of all its earlier hours anew; below);
-- null for every hour. `reason` says which. Built before the four models and their tests,
-- which read it. A full build compares nothing (the last build's copy may have other columns).
-- Per changed run: a run whose team, pod, start and served models are the same in both
-- versions differs from the earlier of its two ends on (the server hours after an end are no
-- longer the run's; a running pod is the run of its server's hours to the end of the window:
-- a deleted or finished pod changes from its end); any other change, or a run new or gone,
-- from its start (a model served later splits every hour of the run anew).
-- depends_on: {{ ref('int_runs') }}
-- depends_on: {{ ref('int_inference_server_hours') }}
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_inference_run_inputs') if execute else none %}
with

states_from as (

    select from_hour, reason from {{ ref('int_gpu_hour_states_recompute_from') }}

),

{%- if range_start is not none and built is not none %}

now_inputs as (

    {{ inference_run_inputs() }}

),

built_inputs as (

    select * from {{ built }}

),

changed_runs as (

    -- a row per version and model: an end alone changed when each model has two versions of
    -- one team, pod and start, and two ends
    select
        run_id,
        case
            when count(distinct team) = 1
                and count(distinct k8s_namespace) = 1
                and count(distinct pod_name) = 1
                and count(distinct started_epoch) = 1
                and count(distinct coalesce(ended_epoch, -1)) = 2
                and count(*) = 2 * count(distinct model_name)
                then min(ended_epoch)
            else min(started_epoch)
        end as changed_from
    from {{ changed_input_rows('now_inputs', 'built_inputs') }}
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
