{#- Bill lines stored by billing period (docs/operations.md, "Incremental runs").

    The models of the bill lines (int_billing__aws, int_billing__gcp, int_billing__focus,
    int_billing__rate_card, int_billing_lines and the mart fct_billing) keep their rows by
    `billing_period_epoch`, the first UTC midnight of the line's landing period (`YYYY-MM`:
    AWS's BILLING_PERIOD, GCP's invoice month, FOCUS's BillingPeriodStart month; a rate-card
    line's hour's month), and a run recomputes every period from the one
    int_billing_lines_recompute_from chose on. -#}

{#- The first UTC midnight of a `YYYY-MM` billing period (a string expression), epoch seconds
    as a bigint (a partition value: Spark would write a double's as `1.7908128E9`) -#}
{% macro period_epoch(period) -%}
    cast({{ to_epoch(dbt.cast(period ~ " || '-01 00:00:00'", api.Column.translate_type('timestamp'))) }} as bigint)
{%- endmacro %}

{#- The first billing period a model stored by billing period recomputes, in `format` (as
    strftime: '%Y-%m' for a landing period, '%Y%m' for a GCP invoice month), or none for every
    period (a full build, while dbt parses, and when the choice says every period) -#}
{% macro first_recomputed_period(format='%Y-%m') -%}
    {%- set value = recompute_from_hour('int_billing_lines_recompute_from', is_incremental()) -%}
    {%- if value is none -%}{{ return(none) }}{%- endif -%}
    {{ return(epoch_date(value).strftime(format)) }}
{%- endmacro %}

{#- The UTC day of an epoch-seconds value, as a date -#}
{% macro epoch_date(seconds) -%}
    {%- set days = ((seconds | int) // 86400) -%}
    {{ return(modules.datetime.date(1970, 1, 1) + modules.datetime.timedelta(days=days)) }}
{%- endmacro %}

{#- The first UTC midnight of the month of an epoch-seconds value, epoch seconds -#}
{% macro month_start_epoch(seconds) -%}
    {%- set first = epoch_date(seconds).replace(day=1) -%}
    {{ return((first - modules.datetime.date(1970, 1, 1)).days * 86400) }}
{%- endmacro %}

{#- A condition true for the rows of the billing periods this run recomputes: `period` is a
    string expression in `format` (compared as strings, so that the engine can skip the landed
    files of other periods by their statistics) -#}
{% macro in_recomputed_periods(period, format='%Y-%m') -%}
    {%- set first = first_recomputed_period(format) -%}
    {%- if first is none -%}true{%- else -%}({{ period }} >= '{{ first }}'){%- endif -%}
{%- endmacro %}

{#- What the bill lines of one period read besides that period's landed lines, and what says a
    period was landed again: each landed period's source totals (one row per source file and
    currency; ingest writes them again, with a new `computed_at`, every time it lands the
    period), each line's share of an EC2 Capacity Block fee or of a GCP commitment (a block's
    or pool's lines can lie in two periods: a period landed again changes the other's shares),
    and each GCP list price version (a new version prices the usage after it; a SKU's first
    version every usage before it too). `period_epoch`: the first period such a row's change
    reaches (null: every period). -#}
{% macro billing_line_inputs() -%}
    select
        'landed' as input,
        landing_table || ':' || x_source || ':' || coalesce(x_source_file, '') || ':'
            || coalesce(currency, '') || ':' || billing_period as subject,
        {{ period_epoch('billing_period') }} as period_epoch,
        cast(source_rows as double) as amount,
        round(source_total, 6) as other_amount,
        cast(computed_at as string) as version
    from {{ model_relation('stg_billing_totals__source_totals') }}
    {%- for input, model in [
        ('capacity_block', 'int_aws_capacity_blocks'), ('commitment', 'int_gcp_commitments')
    ] %}
    union all
    select
        '{{ input }}' as input,
        x_line_key as subject,
        {{ period_epoch('x_billing_period') }} as period_epoch,
        round(amortised, 6) as amount,
        cast(null as double) as other_amount,
        cast(null as string) as version
    from {{ model_relation(model) }}
    {%- endfor %}
    union all
    select
        'list_price' as input,
        sku_id || ':' || currency_code || ':' || cast(fetched_at as string) as subject,
        -- a GCP invoice month is a Pacific month: the period of the day before the version
        case
            when valid_from is not null then cast({{ to_epoch(dbt.date_trunc(
                'month', dbt.dateadd('day', -1, 'valid_from')
            )) }} as bigint)
        end as period_epoch,
        unit_price as amount,
        cast(null as double) as other_amount,
        usage_unit as version
    from {{ model_relation('int_gcp_list_prices') }}
{%- endmacro %}
