-- Each label a GPU unit carried on a host in a day, as one row: the first and the last sample
-- time with that label and how many samples carried it (int_gpu_sample_labels). What the run
-- mapping (int_run_gpu_holdings) and the label findings (int_data_health_findings) look at
-- first: a run window that holds all of a label's samples of a day needs none of them, one that
-- misses them all none either; only a window that cuts through them is checked sample by
-- sample. Stored by sample day: a run recomputes the days of its range (macros/incremental.sql).
{{ incremental_by_day() }}
with

labels as (

    select * from {{ ref('int_gpu_sample_labels') }}
    where {{ in_recomputed_days('day_epoch') }}

),

final as (

    select
        gpu_uuid,
        mig_instance,
        host,
        hpc_job,
        k8s_namespace,
        k8s_pod,
        min(t) as first_t,
        max(t) as last_t,
        count(*) as samples,
        day_epoch
    from labels
    group by gpu_uuid, mig_instance, host, hpc_job, k8s_namespace, k8s_pod, day_epoch

)

select * from final
