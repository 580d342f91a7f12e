-- Which inventory node a DCGM series outside the inventory belongs to. With dcgm-exporter on
-- Kubernetes `Hostname` is the exporter pod; when the reader's `node_label` option is not set
-- and a series whose host names no inventory node carries a `node` or `kubernetes_node` label
-- naming one, that label is the host (`resolved_by`). Else a host name with a domain
-- (`gpu-01.cluster.local`: an exporter reporting the FQDN) whose name up to the first dot is an
-- inventory host is that node (`short_name`), unless another reported name shortens to the same
-- one (two domains: ambiguous, left outside). Series that stay outside the inventory
-- are counted per source and host for data health (int_data_health_findings), never dropped
-- silently. Summed over the days' counts (int_dcgm_outside_host_days), not the landed samples.
with

inventory as (

    select host from {{ ref('stg_config__inventory') }}

),

outside as (

    select
        x_source,
        reported_host,
        labels,
        cast(sum(samples) as bigint) as samples
    from {{ ref('int_dcgm_outside_host_days') }}
    group by x_source, reported_host, labels

),

labelled as (

    select
        outside.*,
        {{ json_text("nullif(outside.labels, '')", "'node'") }} as node_label,
        {{ json_text("nullif(outside.labels, '')", "'kubernetes_node'") }} as kubernetes_node_label
    from outside

),

short_names as (

    select distinct
        reported_host,
        {{ regex_extract('reported_host', "'^([^.]+)[.]'") }} as short_host
    from outside

),

by_short_name as (

    -- the names whose short form is an inventory host no other reported name shortens to
    select short_names.reported_host, inventory.host
    from short_names
    inner join inventory
        on inventory.host = short_names.short_host
    where short_names.short_host in (
        select short_host
        from short_names
        where short_host is not null
        group by short_host
        having count(*) = 1
    )

),

final as (

    select
        labelled.x_source,
        labelled.reported_host,
        labelled.labels,
        labelled.samples,
        coalesce(by_node.host, by_k8s_node.host, by_short_name.host) as host,
        case
            when by_node.host is not null then 'node'
            when by_k8s_node.host is not null then 'kubernetes_node'
            when by_short_name.host is not null then 'short_name'
        end as resolved_by
    from labelled
    left join inventory as by_node
        on by_node.host = labelled.node_label
    left join inventory as by_k8s_node
        on by_k8s_node.host = labelled.kubernetes_node_label
    left join by_short_name
        on by_short_name.reported_host = labelled.reported_host

)

select * from final
