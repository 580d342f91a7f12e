-- The last sample of each vLLM counter and histogram series on each UTC day (the highest value
-- of its duplicates): what the next day's first sample is compared with
-- (int_inference_sample_increases). Stored by day: a run recomputes the days of its range
-- (macros/incremental.sql).
{%- set series = [] -%}
{%- for h in var('inference_histograms') -%}
    {%- do series.extend([h ~ '_bucket', h ~ '_sum', h ~ '_count']) -%}
{%- endfor %}
{{ incremental_by_day() }}
with

samples as (

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

ranked as (

    select
        samples.*,
        floor(t / 86400) * 86400 as day_epoch,
        row_number() over (
            partition by
                host, k8s_namespace, k8s_pod, k8s_container, model_name, metric, le,
                finished_reason, floor(t / 86400)
            order by t desc
        ) as newest_first
    from samples

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
        value,
        day_epoch
    from ranked
    where newest_first = 1

)

select * from final
