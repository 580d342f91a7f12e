-- Every scheduler run with its run_id, team (first matching rule, else `unattributed`) and kind
-- (first matching rule).
with

slurm as (

    select * from {{ ref('int_runs__slurm') }}

),

kubernetes as (

    select * from {{ ref('int_runs__kubernetes') }}

),

unioned as (

    select * from slurm
    union all
    select * from kubernetes

),

runs as (

    select
        scheduler || ':' || cluster || ':' || job_id || ':' || cast(attempt as string) as run_id,
        unioned.*,
        -- whole GPUs plus MIG instances at their compute slices / 7
        unioned.gpus + cast(unioned.mig_slices as double) / 7 as gpu_equivalents
    from unioned

),

team_rules as (

    select * from {{ ref('stg_config__team_rules') }}

),

team_matches as (

    select
        runs.run_id,
        team_rules.team,
        row_number() over (partition by runs.run_id order by team_rules.priority) as rn
    from runs
    inner join team_rules
        on (
            team_rules.rule_type = 'slurm_account'
            and runs.scheduler = 'slurm'
            and team_rules.rule_value = runs.account
        )
        or (
            team_rules.rule_type = 'k8s_namespace'
            and runs.scheduler = 'kubernetes'
            and team_rules.rule_value = runs.k8s_namespace
        )
        or (
            team_rules.rule_type = 'k8s_label'
            and runs.scheduler = 'kubernetes'
            and {{ json_text('runs.labels', 'team_rules.rule_key') }} = team_rules.rule_value
        )

),

kind_rules as (

    select * from {{ ref('stg_config__kind_rules') }}

),

kind_checks as (

    select
        runs.run_id,
        kind_rules.priority,
        kind_rules.kind,
        min(case
            when kind_rules.field = 'any' then 1
            when {{ regex_match(
                "case kind_rules.field
                    when 'partition' then (case when runs.scheduler = 'slurm' then runs.queue end)
                    when 'queue' then runs.queue
                    when 'job_name' then runs.job_name
                    when 'namespace' then runs.k8s_namespace
                end",
                'kind_rules.pattern') }} then 1
            else 0
        end) as matched
    from runs
    cross join kind_rules
    group by runs.run_id, kind_rules.priority, kind_rules.kind

),

kinds as (

    select
        run_id,
        kind,
        row_number() over (partition by run_id order by priority) as rn
    from kind_checks
    where matched = 1

),

final as (

    select
        runs.*,
        -- a run no team rule reaches belongs to `unattributed`, never to nobody
        coalesce(team_matches.team, 'unattributed') as team,
        coalesce(kinds.kind, 'batch') as kind
    from runs
    left join team_matches
        on team_matches.run_id = runs.run_id and team_matches.rn = 1
    left join kinds
        on kinds.run_id = runs.run_id and kinds.rn = 1

)

select * from final
