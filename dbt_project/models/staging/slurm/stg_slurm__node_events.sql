with

source as (

    select * from {{ landing('slurm_node_events') }}

),

renamed as (

    select
        x_source,
        x_source_file,
        x_line_number,
        cluster,
        node,
        time_start as started_at,
        time_end as ended_at,
        state,
        reason,
        node is null as is_cluster_event,
        coalesce(
            {{ regex_match('upper(state)', "'^(" ~ var('outage_node_states') | join('|') ~ ")'") }},
            false
        ) and node is not null as is_outage,
        {{ to_epoch('time_end') }} - {{ to_epoch('time_start') }} as duration_seconds

    from source

)

select * from renamed
