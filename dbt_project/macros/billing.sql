{#- A bill line's charge span in epoch seconds. A line whose charge period has length (hourly,
    daily, monthly) spans [ChargePeriodStart, ChargePeriodEnd). A zero-length line
    (ChargePeriodStart = ChargePeriodEnd: a purchase, a one-time fee) spans the UTC day of its
    start, so that it counts on that day (DESIGN.md, "Cost allocation"); a line matched to a node
    is then spread evenly over that node's hours of the day. -#}
{% macro charge_span_start(start_col, end_col) -%}
    case
        when {{ to_epoch(end_col) }} = {{ to_epoch(start_col) }}
            then floor({{ to_epoch(start_col) }} / 86400) * 86400
        else {{ to_epoch(start_col) }}
    end
{%- endmacro %}

{% macro charge_span_end(start_col, end_col) -%}
    case
        when {{ to_epoch(end_col) }} = {{ to_epoch(start_col) }}
            then floor({{ to_epoch(start_col) }} / 86400) * 86400 + 86400
        else {{ to_epoch(end_col) }}
    end
{%- endmacro %}

{#- Bill lines' reporting-currency effective cost per accounted UTC day and provider, each line
    prorated by its charge span's overlap with the day (hourly, daily and monthly lines alike;
    zero-length lines on the day of their start). Used by the singular tests that reconcile marts
    to fct_billing; `where` filters the lines. -#}
{% macro bill_cost_by_day(where='true') %}

    select
        days.day_epoch,
        billing.provider,
        sum(
            billing.cost
            * (least(billing.ce, days.day_epoch + 86400) - greatest(billing.cs, days.day_epoch))
            / (billing.ce - billing.cs)
        ) as bill_cost
    from (
        select
            x_provider as provider,
            x_effective_cost_reporting as cost,
            {{ charge_span_start('ChargePeriodStart', 'ChargePeriodEnd') }} as cs,
            {{ charge_span_end('ChargePeriodStart', 'ChargePeriodEnd') }} as ce
        from {{ ref('fct_billing') }} as billing
        where ({{ where }})
    ) as billing
    inner join {{ ref('int_days') }} as days
        on billing.cs < days.day_epoch + 86400
        and billing.ce > days.day_epoch
    where billing.ce > billing.cs
    group by days.day_epoch, billing.provider

{% endmacro %}

{#- The resource family of a GCP Compute SKU description, which a commitment SKU and the usage
    it covers share: the words before " running in " / " in <region>" ("Commitment v1: " dropped),
    lowercased; a GPU keeps its model ("nvidia l4 gpu"), vCPU and memory SKUs become "cpu" and
    "ram" ("A2 Instance Core" and "A2 Cpu" are both "cpu"). docs/metrics.md. -#}
{% macro gcp_sku_family(description) -%}
    {%- set name -%}
        lower(trim({{ regex_extract(description, "'^(?:Commitment(?: v[0-9]+)?: *)?(.+?)(?: running)? in .*$'") }}))
    {%- endset -%}
    case
        when {{ name }} like '%gpu%' then {{ name }}
        when {{ name }} like '%ram' then 'ram'
        when {{ name }} like '%cpu' or {{ name }} like '%core' then 'cpu'
        else {{ name }}
    end
{%- endmacro %}
