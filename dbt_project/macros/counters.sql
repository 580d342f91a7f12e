{#- How much a counter rose since the previous sample of its series (portable SQL).
    `first`: the value at a series' first sample. After a drop, a counter that restarts from 0
    (`restarts=true`: volatile ECC counters, energy since boot) rose by its new value; a
    persistent one (remapped rows: a drop is a replaced board or a blank) rose by nothing. -#}
{% macro counter_increase(value, previous, restarts=true, first='0') -%}
case
            when {{ value }} is null then null
            when {{ previous }} is null then {{ first }}
            when {{ value }} >= {{ previous }} then {{ value }} - {{ previous }}
            else {{ value if restarts else '0' }}
        end
{%- endmacro %}

{#- The DCGM_EXP_XID_ERRORS_COUNT samples of the days a run recomputes, one row per GPU, XID code
    (label `xid`, else `err_code`; ingest quarantined a code that is not a whole number and a
    count above 0 without one, so a sample without one counts 0 and is left out) and sample time:
    gpu_uuid, host, gpu_index, t (epoch seconds), xid, value (the code's count over the
    exporter's window). `samples`: the DCGM samples (ref('int_dcgm_samples')). A subquery for
    int_health_xids and int_health_xid_count_last_samples. -#}
{% macro xid_count_samples(samples) -%}
    select * from (
        select
            gpu_uuid,
            host,
            gpu_index,
            {{ to_epoch('sampled_at') }} as t,
            cast(coalesce(
                {{ json_text('labels', "'xid'") }}, {{ json_text('labels', "'err_code'") }}
            ) as integer) as xid,
            value
        from {{ samples }}
        where metric = 'DCGM_EXP_XID_ERRORS_COUNT'
            and mig_instance is null
            and {{ at_recomputed_times('sampled_at') }}
    ) as counts
    where xid is not null
{%- endmacro %}
