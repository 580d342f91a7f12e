-- How each GPU node-day's bill splits between teams (docs/metrics.md, fct_daily_spend): in
-- proportion to the node-day's direct run cost by team (int_run_gpu_hour_costs, the run's team
-- from int_runs), the node-day's unallocated + down cost (nobody held those seconds) going to
-- team null. Node-days with nothing to split on have no row.
-- Stored by day (macros/incremental.sql, `incremental_published_by_day`): a run rewrites the days
-- from the first hour int_spend_recompute_from chose on.
-- (the first hour: {{ ref('int_spend_recompute_from') }})
{{ incremental_published_by_day(to_last_day='int_spend_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_spend_recompute_from') %}
with

run_team_costs as (

    select
        run_hours.day_epoch,
        run_hours.host,
        runs.team,
        sum(run_hours.cost) as amount
    from {{ ref('int_run_gpu_hour_costs') }} as run_hours
    inner join {{ ref('int_runs') }} as runs
        on runs.run_id = run_hours.run_id
    where runs.team is not null and run_hours.day_epoch >= {{ from_hour }}
    group by run_hours.day_epoch, run_hours.host, runs.team

),

unassigned_costs as (

    -- idle (unallocated + down) seconds: nobody held them
    select
        day_epoch,
        host,
        cast(null as string) as team,
        sum((unallocated_seconds + down_seconds) * cost_per_second) as amount
    from {{ ref('int_gpu_hour_states') }}
    where day_epoch >= {{ from_hour }}
    group by day_epoch, host

),

node_amounts as (

    select day_epoch, host, team, sum(amount) as amount
    from (
        select * from run_team_costs
        union all
        select * from unassigned_costs
    ) as amounts
    group by day_epoch, host, team

),

final as (

    select
        day_epoch,
        host,
        team,
        amount / sum(amount) over (partition by day_epoch, host) as share
    from node_amounts
    where amount <> 0

)

select * from final
