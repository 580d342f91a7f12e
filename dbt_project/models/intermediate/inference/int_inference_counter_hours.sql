-- Hourly increases of the vLLM counters and histogram series: one row per series and UTC
-- hour with a sample, the sum of its samples' increases (int_inference_sample_increases, where
-- restarts and duplicates are handled). Increases run across day partitions and belong to the
-- hour of the later sample.
with

increases as (

    select * from {{ ref('int_inference_sample_increases') }}

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
        coalesce(sum(increase), 0) as increase
    from increases
    group by 1, 2, 3, 4, 5, 6, 7, 8, 9

)

select * from final
