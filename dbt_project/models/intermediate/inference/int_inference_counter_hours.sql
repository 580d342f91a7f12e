-- Hourly increases of the vLLM counters and histogram series: one row per series and UTC
-- hour with a sample, the sum of its samples' increases (int_inference_sample_increases, where
-- restarts and duplicates are handled). Increases run across day partitions and belong to the
-- hour of the later sample. Stored by day (of the hour): a run recomputes the days of its
-- range (macros/incremental.sql).
{{ incremental_by_day() }}
with

increases as (

    select * from {{ ref('int_inference_sample_increases') }}
    where {{ in_recomputed_days('day_epoch') }}

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
        hour_epoch,
        count(*) as samples,
        sum(is_reset) as resets,
        coalesce(sum(increase), 0) as increase,
        day_epoch
    from increases
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9, day_epoch

)

select * from final
