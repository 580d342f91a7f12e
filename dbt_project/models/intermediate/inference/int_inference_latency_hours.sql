-- Latency per vLLM server, histogram (var inference_histograms) and UTC hour, from the hour's
-- bucket increases (int_inference_counter_hours) exactly as Prometheus' histogram_quantile:
-- rank = q x the `+Inf` bucket's increase (the hour's observations); the first bucket, in
-- bound order, whose increase reaches the rank holds the quantile, interpolated linearly
-- between its lower bound (the previous bucket's bound; 0 for the lowest bucket) and its upper
-- bound; when that is the `+Inf` bucket the quantile is the highest finite bound. Bucket
-- increases are made monotonic first (each at least the one below it, as Prometheus does).
-- Quantiles are rounded to the nanosecond (9 decimals: no float noise from the interpolation).
-- An hour with no observation has null quantiles. (Missing labels are '' inside the model, so
-- that the joins match them, and null again in its output.) An hour's quantiles read that
-- hour's increases only: stored by day (of the hour), a run recomputes the days of its range
-- (macros/incremental.sql).
{%- set quantiles = [(50, 0.5), (95, 0.95), (99, 0.99)] %}
{{ incremental_by_day() }}
with

counters as (

    select * from {{ ref('int_inference_counter_hours') }}
    where {{ in_recomputed_days('day_epoch') }}

),

buckets as (

    {%- for h in var('inference_histograms') %}
    select
        coalesce(host, '') as host,
        coalesce(k8s_namespace, '') as k8s_namespace,
        coalesce(k8s_pod, '') as k8s_pod,
        coalesce(k8s_container, '') as k8s_container,
        coalesce(model_name, '') as model_name,
        '{{ h }}' as histogram,
        hour_epoch,
        le = '+Inf' as is_inf,
        cast(le as double) as upper_bound,
        increase
    from counters
    where metric = '{{ h }}_bucket' and le is not null
    {{ 'union all' if not loop.last }}
    {%- endfor %}

),

cumulative as (

    select
        *,
        max(increase) over (
            partition by host, k8s_namespace, k8s_pod, k8s_container, model_name, histogram,
                hour_epoch
            order by is_inf, upper_bound
            rows between unbounded preceding and current row
        ) as observed
    from buckets

),

ordered as (

    select
        *,
        row_number() over (
            partition by host, k8s_namespace, k8s_pod, k8s_container, model_name, histogram,
                hour_epoch
            order by is_inf, upper_bound
        ) as bucket_number,
        coalesce(lag(upper_bound) over (
            partition by host, k8s_namespace, k8s_pod, k8s_container, model_name, histogram,
                hour_epoch
            order by is_inf, upper_bound
        ), 0) as lower_bound,
        coalesce(lag(observed) over (
            partition by host, k8s_namespace, k8s_pod, k8s_container, model_name, histogram,
                hour_epoch
            order by is_inf, upper_bound
        ), 0) as observed_below
    from cumulative

),

histogram_hours as (

    select
        host,
        k8s_namespace,
        k8s_pod,
        k8s_container,
        model_name,
        histogram,
        hour_epoch,
        count(*) as buckets,
        max(case when is_inf then observed end) as observations,
        max(case when not is_inf then upper_bound end) as highest_bound
    from ordered
    group by 1, 2, 3, 4, 5, 6, 7

),

ranked as (

    select
        ordered.*,
        histogram_hours.observations,
        histogram_hours.highest_bound
        {%- for name, q in quantiles %},
        min(case when ordered.observed >= {{ q }} * histogram_hours.observations
            then ordered.bucket_number end) over (
            partition by ordered.host, ordered.k8s_namespace, ordered.k8s_pod,
                ordered.k8s_container, ordered.model_name, ordered.histogram,
                ordered.hour_epoch
        ) as p{{ name }}_bucket
        {%- endfor %}
    from ordered
    inner join histogram_hours
        on ordered.histogram = histogram_hours.histogram
        and ordered.hour_epoch = histogram_hours.hour_epoch
        and ordered.host = histogram_hours.host
        and ordered.k8s_namespace = histogram_hours.k8s_namespace
        and ordered.k8s_pod = histogram_hours.k8s_pod
        and ordered.k8s_container = histogram_hours.k8s_container
        and ordered.model_name = histogram_hours.model_name
    where histogram_hours.buckets >= 2 and histogram_hours.observations > 0

),

quantiles as (

    select
        host,
        k8s_namespace,
        k8s_pod,
        k8s_container,
        model_name,
        histogram,
        hour_epoch
        {%- for name, q in quantiles %},
        round(max(case when bucket_number = p{{ name }}_bucket then
            case
                when is_inf then highest_bound
                when bucket_number = 1 and upper_bound <= 0 then upper_bound
                when observed = observed_below then lower_bound
                else lower_bound + (upper_bound - lower_bound)
                    * ({{ q }} * observations - observed_below) / (observed - observed_below)
            end
        end), 9) as p{{ name }}_seconds
        {%- endfor %}
    from ranked
    group by 1, 2, 3, 4, 5, 6, 7

),

sums as (

    {%- for h in var('inference_histograms') %}
    select
        coalesce(host, '') as host,
        coalesce(k8s_namespace, '') as k8s_namespace,
        coalesce(k8s_pod, '') as k8s_pod,
        coalesce(k8s_container, '') as k8s_container,
        coalesce(model_name, '') as model_name,
        '{{ h }}' as histogram,
        hour_epoch,
        sum(case when metric = '{{ h }}_count' then increase end) as observation_count,
        sum(case when metric = '{{ h }}_sum' then increase end) as sum_seconds
    from counters
    where metric in ('{{ h }}_count', '{{ h }}_sum')
    group by 1, 2, 3, 4, 5, 6, 7
    {{ 'union all' if not loop.last }}
    {%- endfor %}

),

final as (

    select
        nullif(histogram_hours.host, '') as host,
        nullif(histogram_hours.k8s_namespace, '') as k8s_namespace,
        nullif(histogram_hours.k8s_pod, '') as k8s_pod,
        nullif(histogram_hours.k8s_container, '') as k8s_container,
        nullif(histogram_hours.model_name, '') as model_name,
        histogram_hours.histogram,
        histogram_hours.hour_epoch,
        floor(histogram_hours.hour_epoch / 86400) * 86400 as day_epoch,
        coalesce(histogram_hours.observations, 0) as observations,
        sums.sum_seconds,
        sums.sum_seconds / nullif(sums.observation_count, 0) as mean_seconds
        {%- for name, q in quantiles %},
        quantiles.p{{ name }}_seconds
        {%- endfor %}
    from histogram_hours
    left join quantiles
        on histogram_hours.histogram = quantiles.histogram
        and histogram_hours.hour_epoch = quantiles.hour_epoch
        and histogram_hours.host = quantiles.host
        and histogram_hours.k8s_namespace = quantiles.k8s_namespace
        and histogram_hours.k8s_pod = quantiles.k8s_pod
        and histogram_hours.k8s_container = quantiles.k8s_container
        and histogram_hours.model_name = quantiles.model_name
    left join sums
        on histogram_hours.histogram = sums.histogram
        and histogram_hours.hour_epoch = sums.hour_epoch
        and histogram_hours.host = sums.host
        and histogram_hours.k8s_namespace = sums.k8s_namespace
        and histogram_hours.k8s_pod = sums.k8s_pod
        and histogram_hours.k8s_container = sums.k8s_container
        and histogram_hours.model_name = sums.model_name

)

select * from final
