-- right_size_mig (docs/metrics.md, "Recommendations"): a run on whole GPUs of a MIG-capable
-- model (var mig_gpu_models) whose p95 hourly memory used (the highest of its GPUs in each
-- hour, GB = 1024 MiB) is below var right_size_max_memory_gb and whose p95 hourly utilisation
-- is below var right_size_max_utilization fits a MIG instance: the smallest profile of var
-- mig_profiles (fewest slices, then least memory) with memory_gb >= p95 memory x (1 + var
-- right_size_memory_headroom). Savings: the run's direct cost x (1 - the profile's slices /
-- var mig_total_slices), per accounted hour, x var recommendation_hours_per_month. A run that
-- release_idle names is not right-sized too (releasing it saves more; never counted twice).
with

usage as (

    select * from {{ ref('int_run_hour_usage') }}

),

runs as (

    select run_id, team, user_name from {{ ref('int_runs') }}

),

released as (

    select subject as run_id from {{ ref('int_recommendations__release_idle') }}

),

window_hours as (

    select count(*) as hours from {{ ref('int_hours') }}

),

profiles as (

    {%- for p in var('mig_profiles') %}
    select
        '{{ p.profile }}' as profile,
        {{ p.slices }} as slices,
        {{ p.memory_gb }} as memory_gb
    {{ 'union all' if not loop.last }}
    {%- endfor %}

),

per_run as (

    select
        run_id,
        count(distinct day_epoch) as days_observed,
        min(case when whole_gpus then 1 else 0 end) = 1 as whole_gpus,
        min(gpu_model) as gpu_model,
        sum(held_seconds) / 3600 as gpu_hours,
        sum(cost) as window_cost,
        {{ percentile_cont('mean_utilization', 0.95) }} as p95_utilization,
        {{ percentile_cont('max_memory_used_mib', 0.95) }} / 1024 as p95_memory_gb
    from usage
    group by 1

),

candidates as (

    select per_run.*
    from per_run
    where per_run.whole_gpus
        and per_run.gpu_model in (
            {%- for m in var('mig_gpu_models') %}'{{ m }}'{{ ', ' if not loop.last }}{% endfor -%}
        )
        and per_run.p95_memory_gb < {{ var('right_size_max_memory_gb') }}
        and per_run.p95_utilization < {{ var('right_size_max_utilization') }}
        and per_run.run_id not in (select run_id from released)

),

fitted as (

    select
        candidates.*,
        profiles.profile,
        profiles.slices,
        profiles.memory_gb,
        row_number() over (
            partition by candidates.run_id order by profiles.slices, profiles.memory_gb
        ) as fit_rank
    from candidates
    inner join profiles
        on profiles.memory_gb
            >= candidates.p95_memory_gb * (1 + {{ var('right_size_memory_headroom') }})

),

final as (

    select
        'right_size_mig' as kind,
        fitted.run_id as subject,
        runs.team,
        runs.user_name as owner,
        fitted.days_observed,
        fitted.p95_utilization,
        fitted.p95_memory_gb,
        fitted.gpu_hours,
        fitted.window_cost,
        fitted.window_cost * ({{ var('mig_total_slices') }} - fitted.slices)
            / {{ var('mig_total_slices') }} as window_savings,
        fitted.window_cost * ({{ var('mig_total_slices') }} - fitted.slices)
            / {{ var('mig_total_slices') }} * {{ var('recommendation_hours_per_month') }}
            / window_hours.hours as monthly_savings,
        'move to MIG ' || fitted.profile || ' (' || cast(fitted.slices as string) || '/'
            || cast({{ var('mig_total_slices') }} as string) || ' of a ' || fitted.gpu_model
            || ')' as action,
        'p95 memory ' || cast(round(fitted.p95_memory_gb, 2) as string) || ' GB, p95 '
            || 'utilisation ' || cast(round(fitted.p95_utilization, 3) as string)
            || ' on whole GPUs' as evidence
    from fitted
    inner join runs
        on runs.run_id = fitted.run_id
    cross join window_hours
    where fitted.fit_rank = 1 and fitted.slices < {{ var('mig_total_slices') }}

)

select * from final
