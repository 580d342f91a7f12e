-- The accounted days (DESIGN.md, "From samples to seconds"): the UTC days `fleetledger run` was
-- asked for, recorded by the pipeline in raw/accounted_days. Nothing depends on which sources
-- landed: a billing-only or scheduler-only fleet gets its day marts too. A warehouse built by
-- dbt alone (no recorded days) falls back to every day from the first to the last day that any
-- sample, power reading or run shows; with recorded days that fallback is not compiled at all
-- (it would scan every landed sample on every run).
{%- set recorded_days = 0 -%}
{%- if execute -%}
    {%- set counted = run_query(
        'select count(*) from ' ~ ref('stg_pipeline__accounted_days')
    ) -%}
    {%- set recorded_days = counted.columns[0].values()[0] | int -%}
{%- endif %}
with

recorded as (

    select distinct floor({{ to_epoch('cast(day as timestamp)') }} / 86400) * 86400 as day_epoch
    from {{ ref('stg_pipeline__accounted_days') }}

){% if recorded_days == 0 %},

seen_times as (

    select {{ to_epoch('sampled_at') }} as t from {{ ref('stg_dcgm__samples') }}
    union all
    select {{ to_epoch('read_at') }} as t from {{ ref('stg_power__readings') }}
    union all
    select {{ to_epoch('started_at') }} as t from {{ ref('int_runs') }}
    union all
    select {{ to_epoch('ended_at') }} - 0.000001 as t from {{ ref('int_runs') }}

),

seen_span as (

    select
        floor(min(t) / 86400) * 86400 as first_day,
        floor(max(t) / 86400) * 86400 as last_day
    from seen_times
    where t is not null

),

fallback as (

    select seen_span.first_day + integers.n * 86400 as day_epoch
    from seen_span
    inner join {{ ref('int_integers') }} as integers
        on integers.n <= (seen_span.last_day - seen_span.first_day) / 86400
    where not exists (select 1 from recorded)

){% endif %},

final as (

    select day_epoch from recorded
    {%- if recorded_days == 0 %}
    union all
    select day_epoch from fallback
    {%- endif %}

)

select * from final
