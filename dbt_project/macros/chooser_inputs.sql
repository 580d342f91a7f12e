{#- What the one-row `*_recompute_from` models compare (docs/operations.md, "Incremental runs"):
    each macro below is what a model stored from a first day on reads from full tables, as it
    reads it now; the model's copy (`int_*_inputs`, built after the model) holds the same query
    as the last build read it, and the chooser compares the two (`changed_input_rows`,
    macros/incremental.sql) to find the first day that changed. -#}

{#- What int_node_hour_costs spreads over the hours: the bill lines of inventory nodes, summed
    per node, provider and charge span (two identical lines count twice), rounded to 1e-6. A
    node's hour changes only when a line whose span reaches it does, so the first day of a
    changed line is where the node-hour costs recompute from (int_node_hour_costs_recompute_from).
    `billing_period_epoch`: the lines' billing period (int_billing_lines is stored by period: the
    lines of a period it did not recompute are those the last build read, and are not compared).
    `day_epoch`: the day of the span's start, by which the copy is stored
    (int_node_hour_cost_inputs): a line that reaches back before the first recomputed day starts
    before it, and no line before that day changed, so its row is kept as it was. -#}
{% macro node_cost_inputs() -%}
    select
        x_host as host,
        x_provider as provider,
        {{ charge_span_start('charge_period_start', 'charge_period_end') }} as cs,
        {{ charge_span_end('charge_period_start', 'charge_period_end') }} as ce,
        count(*) as lines,
        round(sum(x_effective_cost_reporting), 6) as cost,
        round(sum(x_list_cost_reporting), 6) as list_cost,
        round(sum(x_energy_cost), 6) as energy_cost,
        round(sum(x_energy_kwh), 6) as energy_kwh,
        billing_period_epoch,
        cast(floor(
            {{ charge_span_start('charge_period_start', 'charge_period_end') }} / 86400
        ) * 86400 as bigint) as day_epoch
    from {{ model_relation('int_billing_lines') }}
    where x_host is not null
    group by
        x_host,
        x_provider,
        {{ charge_span_start('charge_period_start', 'charge_period_end') }},
        {{ charge_span_end('charge_period_start', 'charge_period_end') }},
        billing_period_epoch
{%- endmacro %}

{#- What the spend models stored by day (int_spend_recompute_from) read of each bill line, as
    they prorate and allocate it: its node, provider, service, sub-account, the team of a line
    matching no node, charge span, effective and billed cost, rounded to 1e-6. A day's spend
    changes only when a line whose span reaches it (or a run holding GPUs on it:
    spend_run_inputs) does. `billing_period_epoch` last, by which the copy is stored
    (int_spend_line_inputs): the lines of a period int_billing_lines did not recompute are
    those the last build read, and are neither compared nor rewritten. -#}
{% macro spend_line_inputs() -%}
    select
        lines.x_line_key as subject,
        lines.x_host as host,
        lines.x_provider as provider,
        lines.service_name as service,
        lines.sub_account_id as sub_account,
        line_teams.team,
        {{ charge_span_start('lines.charge_period_start', 'lines.charge_period_end') }} as cs,
        {{ charge_span_end('lines.charge_period_start', 'lines.charge_period_end') }} as ce,
        round(lines.x_effective_cost_reporting, 6) as cost,
        round(lines.x_billed_cost_reporting, 6) as billed_cost,
        lines.billing_period_epoch
    from {{ model_relation('int_billing_lines') }} as lines
    left join {{ model_relation('int_billing_line_teams') }} as line_teams
        on line_teams.x_line_key = lines.x_line_key
{%- endmacro %}

{#- What the spend models stored by day read of each run: its team, kind and user (a node-day's
    bill splits by its runs' teams); the copy is int_spend_run_inputs -#}
{% macro spend_run_inputs() -%}
    select
        run_id as subject,
        team,
        kind,
        user_name
    from {{ model_relation('int_runs') }}
{%- endmacro %}

{#- What the scheduler's allocation per run and day (int_run_allocated_days) and the team days
    (fct_team_gpu_hours_daily) read of each started run: its team, GPU equivalents, start and
    end (null: still running, allocated to the end of the window). A run's days change only
    when one of these does, and only from the first moment the two versions differ
    (int_team_days_recompute_from); the copy is int_run_allocation_inputs -#}
{% macro run_allocation_inputs() -%}
    select
        run_id,
        coalesce(team, '') as team,
        round(gpu_equivalents, 6) as gpu_equivalents,
        {{ to_epoch('started_at') }} as started_epoch,
        {{ to_epoch('ended_at') }} as ended_epoch
    from {{ model_relation('int_runs') }}
    where started_at is not null
{%- endmacro %}

{#- What the inference run hours (int_inference_run_hours, and int_inference_run_days,
    fct_inference_hourly, fct_inference_daily that sum them) read of each inference run beside
    the stored hours: its team, pod, life and the models its server served over that life (a row
    per run and model: a run serving several models splits each hour's GPU-hours evenly between
    all of them, so a model it serves later changes its earlier hours). A server's hour belongs
    to the run of its namespace and pod whose life reaches into the hour. The copy is
    int_inference_run_inputs; int_inference_run_hours reads its models from here too (with
    ref(), so that its dbt unit tests give the rows) -#}
{% macro inference_run_inputs() -%}
    select distinct
        runs.run_id,
        runs.team,
        runs.k8s_namespace,
        runs.pod_name,
        {{ to_epoch('runs.started_at') }} as started_epoch,
        {{ to_epoch('runs.ended_at') }} as ended_epoch,
        servers.model_name
    from {{ ref('int_runs') }} as runs
    inner join {{ ref('int_inference_server_hours') }} as servers
        on runs.k8s_namespace = servers.k8s_namespace
        and runs.pod_name = servers.k8s_pod
        and servers.hour_epoch + 3600 > {{ to_epoch('runs.started_at') }}
        and (runs.ended_at is null or servers.hour_epoch <= {{ to_epoch('runs.ended_at') }})
    where runs.scheduler = 'kubernetes' and runs.started_at is not null
{%- endmacro %}

{#- What fct_fleet_health_daily reads of each node-day beside the stored downtime and signals
    (int_health_node_days, int_health_node_day_signals): the XIDs per code (int_health_xids),
    the stragglers (a straggler episode may run over several days, and a piece at the end of a
    day counts once the next day's continuation makes the episode long enough) and the
    scheduler outages (`sacctmgr show event` may report an outage, or close it, days after it
    began), each a row per node, day and input, rounded to 1e-6. A node-day changes only when
    one of these does (int_fleet_health_recompute_from); the copy is int_fleet_health_inputs -#}
{% macro fleet_health_inputs() -%}
    select
        'xids' as input,
        host,
        cast(day_epoch as bigint) as day_epoch,
        xid as code,
        cast(sum(xid_count) as double) as amount,
        cast(null as double) as other_amount
    from {{ model_relation('int_health_xids') }}
    group by host, day_epoch, xid
    union all
    select
        'stragglers' as input,
        host,
        cast(day_epoch as bigint) as day_epoch,
        cast(null as integer) as code,
        cast(stragglers as double) as amount,
        round(straggler_gpu_seconds, 6) as other_amount
    from {{ model_relation('int_health_node_day_stragglers') }}
    union all
    select
        'outages' as input,
        host,
        cast(day_epoch as bigint) as day_epoch,
        cast(null as integer) as code,
        cast(outage_events as double) as amount,
        round(scheduler_down_seconds, 6) as other_amount
    from {{ model_relation('int_health_node_day_outages') }}
{%- endmacro %}

{#- What fct_ops_daily reads of each run, Kueue workload, Kueue dump and node outage, a row each:
    when it opened (a run's submission, a workload's creation, a dump's time, an outage's start:
    `opened_epoch`), started (a run's start, a workload's first admission), ended (a run's or a
    workload's end, an outage's) and was gone (a workload's deletion); what counts from its
    opening on (`amount`, `other_amount`, `opening_kind`: a run's GPUs, a workload's GPUs and
    owner, a dump's evictions and requeues), on its start's day (`started_amount`: a run's
    queue wait, a workload's admission wait) and on its end's day (`closing_kind`: a run's state
    and failure class); and `day_epoch`, the first day it counts in (its earliest time's:
    a pending run counts in every day from its submission). A later export changes an earlier
    day only through one of these rows, and one whose end alone changed only from that end on
    (int_ops_daily_recompute_from); the copy is int_ops_daily_inputs -#}
{% macro ops_daily_inputs() -%}
    select
        input,
        subject,
        opened_epoch,
        started_epoch,
        ended_epoch,
        gone_epoch,
        amount,
        other_amount,
        started_amount,
        opening_kind,
        closing_kind,
        cast(floor(least(
            coalesce(opened_epoch, started_epoch, ended_epoch, gone_epoch),
            coalesce(started_epoch, opened_epoch, ended_epoch, gone_epoch),
            coalesce(ended_epoch, opened_epoch, started_epoch, gone_epoch),
            coalesce(gone_epoch, opened_epoch, started_epoch, ended_epoch)
        ) / 86400) * 86400 as bigint) as day_epoch
    from (
        select
            'run' as input,
            run_id as subject,
            cast({{ to_epoch('submitted_at') }} as bigint) as opened_epoch,
            cast({{ to_epoch('started_at') }} as bigint) as started_epoch,
            cast({{ to_epoch('ended_at') }} as bigint) as ended_epoch,
            cast(null as bigint) as gone_epoch,
            cast(gpus as double) as amount,
            cast(null as double) as other_amount,
            round(queue_wait_seconds, 6) as started_amount,
            cast(null as string) as opening_kind,
            concat(upper(coalesce(state, '')), '/', coalesce(failure_class, '')) as closing_kind
        from {{ model_relation('fct_runs') }}
        union all
        select
            'kueue_workload' as input,
            concat(coalesce(workloads.cluster, ''), '/', workloads.workload_uid) as subject,
            cast({{ to_epoch('workloads.created_at') }} as bigint) as opened_epoch,
            cast({{ to_epoch('workloads.first_admitted_at') }} as bigint) as started_epoch,
            cast({{ to_epoch('workloads.finished_at') }} as bigint) as ended_epoch,
            cast({{ to_epoch('workloads.gone_at') }} as bigint) as gone_epoch,
            cast(workloads.gpus_requested as double) as amount,
            cast(null as double) as other_amount,
            round(workloads.admission_wait_seconds, 6) as started_amount,
            concat(
                coalesce(workloads.owner_kind, ''), '/',
                case when with_pods.workload_uid is null then 'no pods' else 'pods' end
            ) as opening_kind,
            cast(null as string) as closing_kind
        from {{ model_relation('int_kueue_workloads') }} as workloads
        left join (
            select distinct cluster, workload_uid
            from {{ model_relation('int_kueue_pod_workloads') }}
        ) as with_pods
            on coalesce(with_pods.cluster, '') = coalesce(workloads.cluster, '')
            and with_pods.workload_uid = workloads.workload_uid
        union all
        select distinct
            'kueue_dump' as input,
            concat(coalesce(cluster, ''), '/', workload_uid) as subject,
            cast({{ to_epoch('snapshot_at') }} as bigint) as opened_epoch,
            cast(null as bigint) as started_epoch,
            cast(null as bigint) as ended_epoch,
            cast(null as bigint) as gone_epoch,
            cast(evicted_count as double) as amount,
            cast(requeue_count as double) as other_amount,
            cast(null as double) as started_amount,
            cast(null as string) as opening_kind,
            cast(null as string) as closing_kind
        from {{ model_relation('stg_kueue__workloads') }}
        union all
        select
            'outage' as input,
            concat(coalesce(cluster, ''), '/', host) as subject,
            cast(started_epoch as bigint) as opened_epoch,
            cast(null as bigint) as started_epoch,
            cast(ended_epoch as bigint) as ended_epoch,
            cast(null as bigint) as gone_epoch,
            cast(null as double) as amount,
            cast(null as double) as other_amount,
            cast(null as double) as started_amount,
            cast(null as string) as opening_kind,
            cast(null as string) as closing_kind
        from {{ model_relation('int_ops_node_outages') }}
    ) as ops_inputs
{%- endmacro %}

{#- What int_gpu_units' rows before a run's range depend on, besides the reports before it:
    each GPU's slot, tenure and first reported hour (null: it never reported) -#}
{% macro gpu_unit_inputs() -%}
    select
        gpus.gpu_uuid,
        gpus.host,
        gpus.gpu_index,
        gpus.tenure_from,
        gpus.tenure_to,
        firsts.first_report_hour
    from {{ model_relation('int_gpus') }} as gpus
    left join (
        select gpu_uuid, min(hour_epoch) as first_report_hour
        from {{ model_relation('int_gpu_hour_reports') }}
        group by gpu_uuid
    ) as firsts
        on firsts.gpu_uuid = gpus.gpu_uuid
{%- endmacro %}

{#- What a GPU-hour state (and a run's GPU-hour cost) reads from full tables, per hour: the
    unheld seconds with a failure signal of each GPU unit (int_gpu_hour_gaps) and each node's
    cost, list cost, energy cost and metered energy (int_node_hour_costs; the energy prices a
    run's measured watt-hours in int_run_gpu_hour_costs), rounded to 1e-6 (sums in another
    order differ in the last bits); `day_epoch`, the hour's day, by which the copy is stored
    (int_gpu_hour_state_inputs) -#}
{% macro gpu_hour_state_inputs() -%}
    select
        'gap' as input,
        gpu_uuid as subject,
        mig_instance,
        hour_epoch,
        round(unheld_signalled_seconds, 6) as amount,
        cast(null as double) as other_amount,
        cast(null as double) as energy_cost,
        cast(null as double) as energy_kwh,
        cast(floor(hour_epoch / 86400) * 86400 as bigint) as day_epoch
    from {{ model_relation('int_gpu_hour_gaps') }}
    union all
    select
        'node_cost' as input,
        host as subject,
        '' as mig_instance,
        hour_epoch,
        round(cost, 6) as amount,
        round(list_cost, 6) as other_amount,
        round(energy_cost, 6) as energy_cost,
        round(energy_kwh, 6) as energy_kwh,
        day_epoch
    from {{ model_relation('int_node_hour_costs') }}
{%- endmacro %}
