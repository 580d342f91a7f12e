-- The first hour fct_ops_daily recomputes in this run (one row; macros/incremental.sql): the
-- first day of the run's range, or the first day before it on which a run, a Kueue workload or
-- dump, or a node outage that differs from the one the last build read counts differently
-- (int_ops_daily_inputs: a later sacct export that starts a job pending since an earlier day,
-- or ends one; a Kueue dump landed again; an outage an export reported or closed days late);
-- null for every hour. `reason` says which. Built before the mart and its tests, which read
-- it. A full build compares nothing (the last build's copy may have other columns).
-- Per changed row: one new or gone, or whose GPUs or owner differ (counted over its whole
-- life), changes the days from its first one; otherwise the first time that differs does, the
-- earlier of its two values (a run pending until it started or ended counts pending on every
-- day before the earlier start or end in both versions; its queue wait counts on its start's
-- day, its state on its end's).
-- depends_on: {{ ref('fct_runs') }}
-- depends_on: {{ ref('int_kueue_workloads') }}
-- depends_on: {{ ref('int_kueue_pod_workloads') }}
-- depends_on: {{ ref('stg_kueue__workloads') }}
-- depends_on: {{ ref('int_ops_node_outages') }}
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_ops_daily_inputs') if execute else none %}
with

{%- if range_start is not none and built is not none %}

now_inputs as (

    {{ ops_daily_inputs() }}

),

built_inputs as (

    select * from {{ built }}

),

changed_versions as (

    -- the rows that count in a day before the range (a row's first day: its earliest time's)
    select * from {{ changed_input_rows(
        'now_inputs', 'built_inputs', where='day_epoch < ' ~ range_start
    ) }}

),

changed_fields as (

    -- per changed row (both versions, or the one of a row new or gone): the earlier of its two
    -- values of each time that differs (a time one version lacks: the other's)
    select
        count(*) as versions,
        min(day_epoch) as first_day,
        case
            when min(coalesce(amount, -1)) <> max(coalesce(amount, -1))
                or min(coalesce(other_amount, -1)) <> max(coalesce(other_amount, -1))
                or min(coalesce(opening_kind, '')) <> max(coalesce(opening_kind, ''))
                then 1
            else 0
        end as counts_differ,
        case
            when min(coalesce(started_epoch, -1)) <> max(coalesce(started_epoch, -1))
                or min(coalesce(started_amount, -1)) <> max(coalesce(started_amount, -1))
                then min(started_epoch)
        end as started_from,
        case
            when min(coalesce(ended_epoch, -1)) <> max(coalesce(ended_epoch, -1))
                then min(ended_epoch)
        end as ended_from,
        case
            when min(coalesce(gone_epoch, -1)) <> max(coalesce(gone_epoch, -1))
                then min(gone_epoch)
        end as gone_from,
        case
            when min(coalesce(closing_kind, '')) <> max(coalesce(closing_kind, ''))
                then min(ended_epoch)
        end as closed_from
    from changed_versions
    group by input, subject, opened_epoch

),

changed_rows as (

    -- a row new or gone, or whose amounts or opening kind differ (counted over its whole
    -- life): from its first day; else from the first time that differs (a run's start or end,
    -- a workload's admission, finish or deletion; its queue or admission wait on its start's
    -- day, its state on its end's)
    select first_day as changed_from from changed_fields
    where versions <> 2 or counts_differ = 1
    union all
    select started_from from changed_fields where versions = 2 and counts_differ = 0
    union all
    select ended_from from changed_fields where versions = 2 and counts_differ = 0
    union all
    select gone_from from changed_fields where versions = 2 and counts_differ = 0
    union all
    select closed_from from changed_fields where versions = 2 and counts_differ = 0

),

final as (

    select
        cast(case
            when min(changed_from) < {{ range_start }} then floor(min(changed_from) / 86400) * 86400
            else {{ range_start }}
        end as bigint) as from_hour,
        case
            when min(changed_from) < {{ range_start }} then 'runs or outages changed'
            else 'range'
        end as reason
    from changed_rows

)

{%- else %}

final as (

    {{ no_comparison_choice(range_start) }}

)

{%- endif %}

select * from final
