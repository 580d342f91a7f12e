-- The team of each bill line that matches no inventory node (docs/metrics.md, fct_daily_spend):
-- the team of the first team rule (by priority, then team) whose `cloud_tag` the line's tags
-- carry or whose `cloud_account` is the line's SubAccountId, else `unattributed`. Lines of GPU
-- nodes are split by their runs instead (int_node_day_team_shares).
-- Stored by billing period in the build warehouse (`incremental_published_by_day`) from the
-- period the bill lines recomputed from: a line's team depends on the line and the config's
-- team rules only (a config change rebuilds every model), so a line of an earlier period keeps
-- the row the last build stored (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

lines as (

    select * from {{ ref('int_billing_lines') }}
    where x_host is null
        and billing_period_epoch >= {{ first_recomputed_hour('int_billing_lines_recompute_from') }}

),

line_rules as (

    select * from {{ ref('stg_config__team_rules') }}
    where rule_type in ('cloud_tag', 'cloud_account')

),

rule_hits as (

    select
        lines.x_line_key,
        line_rules.team,
        line_rules.priority
    from lines
    inner join line_rules
        on (
            line_rules.rule_type = 'cloud_tag'
            and {{ json_text('lines.tags', 'line_rules.rule_key') }} = line_rules.rule_value
        )
        or (
            line_rules.rule_type = 'cloud_account'
            and lines.sub_account_id = line_rules.rule_value
        )

),

matches as (

    select
        x_line_key,
        team,
        row_number() over (partition by x_line_key order by priority, team) as rn
    from rule_hits

),

final as (

    select
        lines.x_line_key,
        coalesce(matches.team, 'unattributed') as team,
        lines.billing_period_epoch
    from lines
    left join matches
        on matches.x_line_key = lines.x_line_key and matches.rn = 1

)

select * from final
