-- Every warning a run raised (DESIGN.md, "Data health"), kept across runs and full refreshes:
-- this build's findings (int_data_health_findings, stamped with the run) plus those of earlier
-- runs, which the pipeline keeps in raw/data_health_log after each published build.
with

current_run as (

    select
        {% if run_env('FLEETLEDGER_RUN_AT') %}
        cast('{{ run_env("FLEETLEDGER_RUN_AT") }}' as timestamp) as run_at,
        {% else %}
        cast(current_timestamp as timestamp) as run_at,
        {% endif %}
        '{{ run_env("FLEETLEDGER_RUN_ID", "dbt") }}' as run_id,
        source,
        day,
        check_name as {{ adapter.quote('check') }},
        severity,
        count,
        message
    from {{ ref('int_data_health_findings') }}

),

history as (

    select
        cast(run_at as timestamp) as run_at,
        run_id,
        source,
        day,
        check_name as {{ adapter.quote('check') }},
        severity,
        count,
        message
    from {{ ref('stg_pipeline__data_health_log') }}
    where run_id <> '{{ run_env("FLEETLEDGER_RUN_ID", "dbt") }}'

),

final as (

    select * from current_run
    union all
    select * from history

)

select * from final
