-- The increase of every vLLM counter (var inference_counters) and histogram series (var
-- inference_histograms: `_bucket` per `le`, `_sum`, `_count`) at each of its samples, the one
-- place the counter rule is written (int_inference_counter_hours sums it per hour): a
-- sample's increase is its value minus the series' previous sample's; a value below the
-- previous one means the server restarted and the counter began again from 0, so the increase
-- is the new value (Prometheus' increase() rule: counter_increase macro). A series' first
-- sample has no increase (null: there is nothing to compare it with). Duplicates of one sample
-- (the same series scraped by two jobs: other `labels`) count once. The increase belongs to
-- the UTC hour of the sample (`hour_epoch`). Stored by sample day: a run recomputes the days of
-- its range, each series' first sample in it compared with the series' last sample before it
-- (int_inference_last_samples: one row per series and earlier day, not the landed history).
{%- set series = [] -%}
{%- for h in var('inference_histograms') -%}
    {%- do series.extend([h ~ '_bucket', h ~ '_sum', h ~ '_count']) -%}
{%- endfor %}
{{ incremental_by_day() }}
with

recomputed as (

    select
        host,
        k8s_namespace,
        k8s_pod,
        k8s_container,
        model_name,
        metric,
        le,
        finished_reason,
        {{ to_epoch('sampled_at') }} as t,
        max(value) as value
    from {{ ref('stg_inference__samples') }}
    where metric in (
        {%- for m in var('inference_counters') + series %}
        '{{ m }}'{{ ',' if not loop.last }}
        {%- endfor %}
    )
        and {{ at_recomputed_times('sampled_at') }}
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9

),

last_before as (

    -- each series' last sample before the first recomputed day (none on a full build)
    select
        host, k8s_namespace, k8s_pod, k8s_container, model_name, metric, le, finished_reason,
        sampled_epoch as t,
        value
    from (
        {{ newest_before_range(
            ref('int_inference_last_samples'),
            ['host', 'k8s_namespace', 'k8s_pod', 'k8s_container', 'model_name', 'metric', 'le',
             'finished_reason']
        ) }}
    ) as last_samples

),

samples as (

    select recomputed.*, false as is_carried_in from recomputed
    union all
    select
        host, k8s_namespace, k8s_pod, k8s_container, model_name, metric, le, finished_reason,
        t, value, true as is_carried_in
    from last_before

),

ordered as (

    select
        *,
        lag(value) over (
            partition by
                host, k8s_namespace, k8s_pod, k8s_container, model_name, metric, le,
                finished_reason
            order by t
        ) as previous_value
    from samples

),

increases as (

    select
        *,
        cast(floor(t / 3600) * 3600 as bigint) as hour_epoch,
        case when value < previous_value then 1 else 0 end as is_reset,
        {{ counter_increase('value', 'previous_value', first='null') }} as increase
    from ordered

),

final as (

    select
        host,
        k8s_namespace,
        k8s_pod,
        k8s_container,
        model_name,
        metric,
        le,
        finished_reason,
        t as sampled_epoch,
        hour_epoch,
        value,
        previous_value,
        is_reset,
        increase,
        floor(t / 86400) * 86400 as day_epoch
    from increases
    where not is_carried_in

)

select * from final
