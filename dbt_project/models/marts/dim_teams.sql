with

teams as (

    select * from {{ ref('stg_config__teams') }}

),

rules as (

    select * from {{ ref('stg_config__team_rules') }}

),

final as (

    select
        teams.team,
        teams.owners,
        count(rules.rule_type) as mapping_rules
    from teams
    left join rules
        on rules.team = teams.team
    group by teams.team, teams.owners

)

select * from final
