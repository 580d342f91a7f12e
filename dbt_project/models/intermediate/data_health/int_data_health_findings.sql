-- What this build found that a user must hear about (DESIGN.md, "Data health"), one row per
-- source, day and check: telemetry gaps, DCGM hosts outside the inventory (and hosts taken from
-- a Kubernetes `node` label), GPUs reported at indices the inventory's `gpus` leaves out (and
-- inventory GPUs that never reported beside ones that did), hpc_job labels that name a job running on other hosts only, bill
-- lines that match no node, GCP usage whose committed use discount no landed commitment fee
-- covers, marts that cannot be computed from the sources present, config
-- meter names no reading shows, and what each source's ingest in this run found (its warnings
-- and quarantined rows by reason). fct_data_health adds the run and the findings of earlier
-- runs.
with

gaps as (

    -- the GPUs' telemetry gaps per node and day (int_health_node_days sums the GPU-hour
    -- states' and is stored by day: this reads a row per node-day, not every GPU-hour)
    select
        node_days.host,
        node_days.day_epoch,
        node_days.telemetry_gap_seconds / 3600 as gpu_hours
    from {{ ref('int_health_node_days') }} as node_days
    -- at least five GPU-minutes: a scrape offset at the window start is no finding
    where node_days.telemetry_gap_seconds >= 300

),

host_sources as (

    -- the source reporting each host (int_dcgm_host_days: samples per source, host and day)
    select host, min(x_source) as x_source
    from {{ ref('int_dcgm_host_days') }}
    group by host

),

telemetry_gaps as (

    select
        coalesce(host_sources.x_source, 'dcgm') as source,
        cast({{ from_epoch('gaps.day_epoch') }} as date) as day,
        'telemetry_gap:' || gaps.host as check_name,
        'warning' as severity,
        cast(round(gaps.gpu_hours * 3600) as bigint) as count,
        gaps.host || ': ' || cast(round(gaps.gpu_hours, 2) as string)
            || ' GPU-hours no sample covers, no run holds and no failure signal explains'
            || ' (counted unallocated and unobserved, not downtime); check the exporter or scrape'
            as message
    from gaps
    left join host_sources
        on host_sources.host = gaps.host

),

outside as (

    select * from {{ ref('int_dcgm_host_labels') }}

),

hosts_outside as (

    select
        x_source as source,
        cast(null as date) as day,
        'host_not_in_inventory:' || reported_host as check_name,
        'warning' as severity,
        sum(samples) as count,
        'DCGM host ' || reported_host || ' (' || cast(sum(samples) as string)
            || ' samples) is not in the inventory: its samples are in no mart; add it to'
            || ' `inventory:` (host, provider, site, gpus), or set the source''s `node_label`'
            || ' option if it is an exporter pod' as message
    from outside
    where host is null
    group by x_source, reported_host

),

slots_outside as (

    -- GPUs an inventory host reports at an index its `gpus` leaves out (int_gpus has no slot
    -- for them): their samples are in no mart
    select
        coalesce(host_sources.x_source, 'dcgm') as source,
        cast(null as date) as day,
        'gpu_index_not_in_inventory:' || reports.host as check_name,
        'warning' as severity,
        sum(reports.samples) as count,
        reports.host || ' reported ' || cast(count(distinct reports.gpu_uuid) as string)
            || ' GPU(s) at indices ' || cast(min(reports.gpu_index) as string) || '-'
            || cast(max(reports.gpu_index) as string) || ' (' || cast(sum(reports.samples) as string)
            || ' samples) beyond the inventory''s `gpus: ' || cast(max(inventory.gpus) as string)
            || '`: their samples are in no mart; set the host''s `gpus` to the GPUs it has'
            as message
    from {{ ref('int_gpu_hour_reports') }} as reports
    inner join {{ ref('stg_config__inventory') }} as inventory
        on inventory.host = reports.host
    left join host_sources
        on host_sources.host = reports.host
    where reports.gpu_index >= inventory.gpus
    group by coalesce(host_sources.x_source, 'dcgm'), reports.host

),

slots_silent as (

    -- inventory slots that never reported on a host whose other GPUs did: every hour of them
    -- counts down (other GPUs of the node report), which a `gpus` larger than the node's real
    -- count also produces
    select
        coalesce(host_sources.x_source, 'dcgm') as source,
        cast(null as date) as day,
        'gpu_never_reported:' || gpus.host as check_name,
        'warning' as severity,
        sum(case when gpus.reported then 0 else 1 end) as count,
        gpus.host || ': ' || cast(sum(case when gpus.reported then 0 else 1 end) as string)
            || ' of its ' || cast(max(gpus.gpus_per_node) as string)
            || ' inventory GPUs (index '
            || {{ string_agg_sorted(
                'case when not gpus.reported then cast(gpus.gpu_index as string) end'
            ) }}
            || ') never reported while its other GPUs did: counted down, their cost idle;'
            || ' check the GPUs, or set the host''s `gpus` to the GPUs it has' as message
    from {{ ref('int_gpus') }} as gpus
    left join host_sources
        on host_sources.host = gpus.host
    group by coalesce(host_sources.x_source, 'dcgm'), gpus.host
    having max(case when gpus.reported then 1 else 0 end) = 1
        and min(case when gpus.reported then 1 else 0 end) = 0

),

hosts_by_label as (

    select
        x_source as source,
        cast(null as date) as day,
        case when resolved_by = 'short_name' then 'host_from_short_name:' else 'host_from_label:' end
            || reported_host || ':' || host as check_name,
        'info' as severity,
        sum(samples) as count,
        case
            when resolved_by = 'short_name'
                then 'samples of ' || reported_host || ' took their host ' || host
                    || ': the name up to its first dot is that inventory node, and no other'
                    || ' reported name shortens to it'
            else 'samples of ' || reported_host || ' took their host ' || host || ' from the `'
                || resolved_by || '` label (no `node_label` option set)'
        end as message
    from outside
    where host is not null
    group by x_source, reported_host, host, resolved_by

),

unmatched_lines as (

    select
        x_source as source,
        cast(null as date) as day,
        'bill_lines_without_node:' || x_provider as check_name,
        'info' as severity,
        count(*) as count,
        cast(count(*) as string) || ' ' || x_provider || ' bill lines ('
            || cast(round(sum(x_effective_cost_reporting), 2) as string)
            || ' in the reporting currency) match no inventory node: spend by tag, account or'
            || ' `unattributed`, never GPU-hours' as message
    from {{ ref('int_billing_lines') }}
    where x_host is null
    group by x_source, x_provider

),

gcp_cud_lines as (

    -- GCP usage rows with a COMMITTED_USAGE_DISCOUNT credit that no commitment fee row of the
    -- landed bills covers (int_gcp_commitments gives every row it matched a share): the fee
    -- bills to another account or export, so the usage nets to about 0 and its node and runs
    -- cost nothing
    select
        lines.x_source,
        coalesce(lines.billing_account_id, '') as billing_account_id,
        coalesce(lines.project_id, '') as project_id,
        lines.currency,
        lines.usage_start,
        lines.usage_end,
        lines.credits_cud_amount
    from {{ ref('stg_gcp_billing__lines') }} as lines
    left join {{ ref('int_gcp_commitments') }} as commitments
        on commitments.x_line_key = 'gcp:' || lines.x_source || ':' || lines.x_source_file
            || ':' || cast(lines.x_line_number as string)
    where
        lines.credits_cud_amount < 0
        and coalesce(lines.cost_type, 'regular') = 'regular'
        and commitments.x_line_key is null

),

cud_without_fee as (

    select
        x_source as source,
        cast(usage_start as date) as day,
        'cud_without_commitment_fee:' || billing_account_id || ':' || project_id as check_name,
        'warning' as severity,
        count(*) as count,
        cast(count(*) as string) || ' GCP usage lines of billing account ' || billing_account_id
            || ', project ' || project_id || ' from ' || {{ timestamp_text('min(usage_start)') }}
            || ' to ' || {{ timestamp_text('max(usage_end)') }} || ' (UTC) carry committed use discount'
            || ' credits of ' || cast(round(sum(credits_cud_amount), 2) as string) || ' '
            || currency || ' that no commitment fee row in the landed bills covers: that usage'
            || ' nets to about 0, so its nodes and runs cost nothing; land the export that'
            || ' holds the commitment fees (SKU "Commitment v1: ...", no resource)' as message
    from gcp_cud_lines
    group by x_source, cast(usage_start as date), billing_account_id, project_id, currency

),

dcgm_hosts as (

    select count(distinct reported_host) as hosts,
        {{ string_agg_sorted('reported_host') }} as names
    from outside
    where host is null

),

gpu_rows as (

    select count(*) as n from {{ ref('int_gpus') }}

),

marts_missing as (

    select
        'dcgm' as source,
        cast(null as date) as day,
        'mart_not_computed:fct_gpu_hours' as check_name,
        'warning' as severity,
        dcgm_hosts.hosts as count,
        'fct_gpu_hours: no inventory host matches the ' || cast(dcgm_hosts.hosts as string)
            || ' DCGM hosts seen: ' || dcgm_hosts.names as message
    from dcgm_hosts
    cross join gpu_rows
    where gpu_rows.n = 0 and dcgm_hosts.hosts > 0

),

config_meter_names as (

    select site, meter, case when is_it_total then 'it_meters' else 'meter_parents' end as key
    from {{ ref('stg_config__meters') }}
    union
    select site, parent_meter as meter, 'meter_parents' as key
    from {{ ref('stg_config__meters') }}
    where parent_meter is not null

),

meters_seen as (

    select distinct site, meter from {{ ref('stg_power__readings') }}

),

meters_unseen as (

    -- a config that names a meter the site's readings never show (a typo): without it a child
    -- can be added to its parent, or IT energy falls back to an estimate
    select
        'config' as source,
        cast(null as date) as day,
        'meter_not_found:' || config_meter_names.site || ':' || config_meter_names.meter
            as check_name,
        'warning' as severity,
        cast(0 as bigint) as count,
        'sites.' || config_meter_names.site || '.' || config_meter_names.key || ' names meter '
            || config_meter_names.meter || ', which has no power readings at site '
            || config_meter_names.site || ': check the name (the site''s IT energy does not'
            || ' follow the config while it is wrong)' as message
    from config_meter_names
    left join meters_seen
        on meters_seen.site = config_meter_names.site
        and meters_seen.meter = config_meter_names.meter
    where meters_seen.meter is null

),

ingest_findings as (

    -- the ingest assets of this run (dbt var run_id is the Dagster run id): a source this run
    -- did not ingest keeps its findings in the log of the run that did
    select
        source,
        day,
        check_name,
        severity,
        count,
        message
    from {{ ref('stg_pipeline__ingest_findings') }}
    where run_id = '{{ run_env("FLEETLEDGER_RUN_ID", "dbt") }}'

),

slurm_windows as (

    select
        job_id_raw,
        hosts,
        {{ to_epoch('started_at') }} as t_from,
        {{ to_epoch('ended_at') }} as t_to
    from {{ ref('int_runs') }}
    where scheduler = 'slurm' and started_at is not null

),

label_hosts as (

    -- the hosts whose samples carry each job id as hpc_job (int_gpu_label_days: a row per
    -- label, unit and day)
    select distinct host, hpc_job
    from {{ ref('int_gpu_label_days') }}
    where hpc_job is not null

),

off_host_candidates as (

    -- a label can name a job running then on other hosts only where some run of that job id
    -- lacks the labelled host: only those hosts' labels of those job ids are looked at below
    select distinct label_hosts.host, label_hosts.hpc_job
    from label_hosts
    inner join slurm_windows
        on slurm_windows.job_id_raw = label_hosts.hpc_job
    where not coalesce({{ list_has('slurm_windows.hosts', 'label_hosts.host') }}, false)

),

label_runs as (

    -- hpc_job labels and the Slurm runs of that job id running at the sample, on whichever
    -- cluster: a label is evidence only for a run whose hosts include the labelled host
    select
        labels.host,
        labels.t,
        labels.hpc_job,
        max(case when {{ list_has('slurm_windows.hosts', 'labels.host') }} then 1 else 0 end)
            as on_own_host
    from {{ ref('int_gpu_sample_labels') }} as labels
    inner join off_host_candidates
        on off_host_candidates.host = labels.host
        and off_host_candidates.hpc_job = labels.hpc_job
    inner join slurm_windows
        on slurm_windows.job_id_raw = labels.hpc_job
        and labels.t >= slurm_windows.t_from
        and (slurm_windows.t_to is null or labels.t < slurm_windows.t_to)
    group by labels.gpu_uuid, labels.mig_instance, labels.host, labels.t, labels.hpc_job

),

off_host_labels as (

    select
        coalesce(host_sources.x_source, 'dcgm') as source,
        cast({{ from_epoch('floor(label_runs.t / 86400) * 86400') }} as date) as day,
        'hpc_job_label_off_hosts:' || label_runs.host as check_name,
        'warning' as severity,
        count(*) as count,
        cast(count(*) as string) || ' DCGM samples of ' || label_runs.host
            || ' carry hpc_job labels (e.g. ' || min(label_runs.hpc_job)
            || ') naming Slurm jobs that ran then on other hosts only: they map no run (a job'
            || ' id is matched on its own hosts, as ids repeat across clusters); check that the'
            || ' inventory host names are the ones Slurm uses' as message
    from label_runs
    left join host_sources
        on host_sources.host = label_runs.host
    where label_runs.on_own_host = 0
    group by
        coalesce(host_sources.x_source, 'dcgm'),
        cast({{ from_epoch('floor(label_runs.t / 86400) * 86400') }} as date),
        label_runs.host

),

final as (

    select * from telemetry_gaps
    union all
    select * from off_host_labels
    union all
    select * from hosts_outside
    union all
    select * from slots_outside
    union all
    select * from slots_silent
    union all
    select * from hosts_by_label
    union all
    select * from unmatched_lines
    union all
    select * from cud_without_fee
    union all
    select * from marts_missing
    union all
    select * from meters_unseen
    union all
    select * from ingest_findings

)

select * from final
