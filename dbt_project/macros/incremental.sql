{#- Incremental models by day (docs/operations.md, "Incremental runs").

    A model stored by day calls `{{ incremental_by_day() }}`: it is an incremental model whose
    rows of a day are replaced whole. A run recomputes the days of its range: the pipeline
    passes it as FLEETLEDGER_RECOMPUTE_START / FLEETLEDGER_RECOMPUTE_END (inclusive days), its
    range widened to the days of runs that did not finish (fleetledger/incremental.py); without
    them (dbt run by hand) and on a full refresh every day is recomputed. The strategy is the
    adapter's: DuckDB (default) deletes the recomputed days and inserts them again; an engine
    with partition overwrite (Spark) would overwrite the day partitions instead.

    `days_before`: how many days before the range the model rewrites as well (a model whose
    rows of a day depend on the next day's first samples: 1); it is the model's
    `meta.days_before`, which the tests read (tests/spark/test_spark_marts.py), and the model
    passes the same number to the range macros below. -#}

{% macro incremental_by_day(day_column='day_epoch', days_before=0) -%}
    {{ return(adapter.dispatch('incremental_by_day')(day_column, days_before)) }}
{%- endmacro %}

{% macro default__incremental_by_day(day_column, days_before) -%}
    {{ config(
        materialized='incremental',
        database=history_database(),
        incremental_strategy=fleetledger_incremental_strategy(),
        unique_key=day_column,
        on_schema_change='fail',
        meta={'day_model': true, 'days_before': days_before}
    ) }}
{%- endmacro %}

{#- DuckDB keeps the day models in a database file of their own, `build/history.duckdb`, which
    profiles.yml attaches under this name beside the build warehouse: the history they hold
    (every sample of every day) is never copied, neither by publish nor as the state a failed
    build goes back to (fleetledger/publish.py, docs/operations.md "Where the build keeps its
    history"); the published snapshot holds everything else. -#}
{% macro history_database() -%}history{%- endmacro %}

{#- Spark overwrites the recomputed day partitions (partitionOverwriteMode=dynamic, set in the
    spark profile) -#}
{% macro spark__incremental_by_day(day_column, days_before) -%}
    {{ config(
        materialized='incremental',
        incremental_strategy=fleetledger_incremental_strategy(),
        partition_by=[day_column],
        file_format='parquet',
        on_schema_change='fail',
        post_hook="{{ spark_schema_file() }}",
        meta={'day_model': true, 'days_before': days_before}
    ) }}
{%- endmacro %}

{#- A partitioned Spark table with no row has no Parquet file, so nothing outside Spark can
    tell its columns (a fleet with no host outside the inventory, no energy counter): after
    each build a day model writes an empty Parquet file with its schema to
    `<warehouse>/<schema>.db/_schemas/<table>/`, which the DuckDB snapshot export reads for a
    table without data files (fleetledger/publish.py). -#}
{% macro spark_schema_file() -%}
    {%- set warehouse = env_var(
        'FLEETLEDGER_SPARK_WAREHOUSE_DIR',
        env_var('FLEETLEDGER_HOME', '../data') ~ '/build/spark/warehouse'
    ) -%}
    insert overwrite directory '{{ warehouse }}/{{ this.schema }}.db/_schemas/{{ this.identifier }}'
    using parquet
    select * from {{ this }} where false
{%- endmacro %}

{#- the first and the last recomputed day as epoch seconds of their midnight (UTC), or none
    when every day is recomputed (not incremental, or no run range given) -#}
{% macro recompute_range() -%}
    {%- set start = run_env('FLEETLEDGER_RECOMPUTE_START') -%}
    {%- set end = run_env('FLEETLEDGER_RECOMPUTE_END') -%}
    {%- if not is_incremental() or start == '' or end == '' -%}
        {{ return(none) }}
    {%- endif -%}
    {%- set epoch = modules.datetime.date(1970, 1, 1) -%}
    {%- set first = modules.datetime.date.fromisoformat(start[:10]) -%}
    {%- set last = modules.datetime.date.fromisoformat(end[:10]) -%}
    {{ return([(first - epoch).days * 86400, (last - epoch).days * 86400]) }}
{%- endmacro %}

{#- a condition true for the days this run recomputes: `day_epoch` is an epoch-seconds
    expression of a UTC midnight; `days_before` widens the range by that many days before its
    first (a model whose day rows depend on the next day's first samples rewrites the day
    before the range too) -#}
{% macro in_recomputed_days(day_epoch, days_before=0) -%}
    {%- set days = recompute_range() -%}
    {%- if days is none -%}
        true
    {%- else -%}
        ({{ day_epoch }} >= {{ days[0] - days_before * 86400 }}
            and {{ day_epoch }} < {{ days[1] + 86400 }})
    {%- endif -%}
{%- endmacro %}

{#- a condition true for the times (a timestamp expression) of the days this run recomputes
    (compared as timestamps, so the engine can skip Parquet row groups by their statistics) -#}
{% macro at_recomputed_times(ts, days_before=0) -%}
    {%- set days = recompute_range() -%}
    {%- if days is none -%}
        true
    {%- else -%}
        ({{ ts }} >= {{ from_epoch(days[0] - days_before * 86400) }}
            and {{ ts }} < {{ from_epoch(days[1] + 86400) }})
    {%- endif -%}
{%- endmacro %}

{#- the first recomputed day's midnight (epoch seconds, `days_before` days earlier); earlier
    than any sample when every day is recomputed -#}
{% macro first_recomputed_epoch(days_before=0) -%}
    {%- set days = recompute_range() -%}
    {{- -1e18 if days is none else days[0] - days_before * 86400 -}}
{%- endmacro %}

{#- the midnight after the last recomputed day (epoch seconds); later than any sample when
    every day is recomputed -#}
{% macro after_recomputed_epoch() -%}
    {%- set days = recompute_range() -%}
    {{- 1e18 if days is none else days[1] + 86400 -}}
{%- endmacro %}

{#- How an incremental model replaces the days a run rebuilds, per engine (docs/scaling.md):
    DuckDB deletes the rebuilt days' rows and inserts the new ones (`delete+insert` on the
    model's unique key); Spark overwrites the rebuilt day partitions of a Parquet table
    (`insert_overwrite` with spark.sql.sources.partitionOverwriteMode=dynamic, set in the spark
    profile; Delta and Iceberg would allow `merge`, but their jars are not available here). An
    incremental model takes it as
    `{{ config(materialized='incremental', incremental_strategy=fleetledger_incremental_strategy(),
    unique_key=[...], partition_by=['day'], file_format='parquet') }}`: `unique_key` is what
    DuckDB deletes by, `partition_by` / `file_format` what Spark overwrites by (DuckDB ignores
    them). -#}

{% macro fleetledger_incremental_strategy() -%}
    {{ return(adapter.dispatch('fleetledger_incremental_strategy')()) }}
{%- endmacro %}

{% macro duckdb__fleetledger_incremental_strategy() -%}{{ return('delete+insert') }}{%- endmacro %}

{% macro spark__fleetledger_incremental_strategy() -%}{{ return('insert_overwrite') }}{%- endmacro %}

{% macro default__fleetledger_incremental_strategy() -%}{{ return('delete+insert') }}{%- endmacro %}

{#- A value that differs from run to run (the recomputed days, the run's id and time), from the
    environment the pipeline sets: read only when a node executes (`default` while dbt parses).
    dbt's partial parsing re-parses every file whose parse read an environment variable whose
    value changed, so reading these at parse time re-parsed some 46 files (the day models and
    the schema files of their tests) in every run. -#}
{% macro run_env(name, default='') -%}
    {{ return(env_var(name, default) if execute else default) }}
{%- endmacro %}

{#- The newest row of each series before the first day a run recomputes (`days_before` days
    earlier than the range), read from a model of one row per series and day (the last-sample
    models: int_gpu_last_samples, int_gpu_energy_last_samples, int_inference_last_samples):
    the sample a day model carries into the range, to cover into it or to be compared with the
    range's first sample. `series`: the key columns; `where`: a further condition on the rows.
    No row on a full build (every day is recomputed). A subquery:
    `from ({{ newest_before_range(ref('int_gpu_last_samples'), ['gpu_uuid', 'mig_instance']) }})
    as carried`; its rows carry one more column, `newest_first` (1). -#}
{% macro newest_before_range(relation, series, days_before=0, where='true') -%}
    select * from (
        select
            rows_by_day.*,
            row_number() over (
                partition by {{ series | join(', ') }} order by rows_by_day.day_epoch desc
            ) as newest_first
        from {{ relation }} as rows_by_day
        where rows_by_day.day_epoch < {{ first_recomputed_epoch(days_before) }}
            and {{ where }}
    ) as ranked
    where newest_first = 1
{%- endmacro %}
