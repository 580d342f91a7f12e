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
