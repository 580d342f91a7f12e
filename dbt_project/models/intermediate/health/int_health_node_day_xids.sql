-- XIDs per node and UTC day (int_health_xids: DCGM_EXP_XID_ERRORS_COUNT where exported, else
-- changes of the DCGM_FI_DEV_XID_ERRORS gauge, a lower bound): all of them, one column per code
-- of vars `fatal_xids` and `health_xid_codes`, and the fatal ones. Node-days without XIDs have
-- no row. Stored by day (macros/incremental.sql): a run rewrites the days of its range, as
-- int_health_xids does.
{{ incremental_by_day() }}
{%- set xid_codes = (var('fatal_xids') + var('health_xid_codes')) | unique | sort %}
with

xids as (

    select * from {{ ref('int_health_xids') }}
    where {{ in_recomputed_days('day_epoch') }}

),

final as (

    select
        host,
        day_epoch,
        sum(xid_count) as xid_count,
        {%- for code in xid_codes %}
        sum(case when xid = {{ code }} then xid_count else 0 end) as xid_{{ code }}_count,
        {%- endfor %}
        sum(case when is_fatal then xid_count else 0 end) as fatal_xid_count
    from xids
    group by host, day_epoch

)

select * from final
