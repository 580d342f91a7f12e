{#- The landing zone (docs/landing.md) as the `landing` source's tables.

    DuckDB reads each table in place through the source's `external_location` meta
    (`read_parquet('$LANDING/<table>/**/*.parquet', union_by_name=true)`): nothing to create.
    The staging models read a landing table through `landing(table)`, which puts the landing
    zone's path, $FLEETLEDGER_HOME/raw, in place of `$LANDING` when the model runs, so that the
    views name the home's files while parsing the project reads no home: one parse cache
    serves every home (orchestration/dbt_parse.py).

    Spark (on-run-start, `create_landing_tables`): for each landing table, an external Parquet
    table `landing.<table>__files` over `<landing>/<table>/*` (every `<source>/<partition>/` file
    under it: recursiveFileLookup, schemas merged by name like union_by_name; the glob names
    `_schema/` itself, which Spark's listing would skip as hidden, so a table no source fills
    reads as empty with its columns), recreated every build so
    that columns and files landed since are seen: `landing.<table>`, which the models read. A
    table whose meta names a `filename_column` is `landing.<table>__files` instead, under the
    view `landing.<table>` that adds the file's path in that column (parsed for source and
    partition as DuckDB's `filename=true` column is). `<landing>` is
    $FLEETLEDGER_LANDING_LOCATION (an `s3a://` URI on a cluster), else $FLEETLEDGER_HOME/raw. -#}

{% macro landing(table) -%}
    {#- `source()` records the lineage (and is what a unit test replaces with its rows) -#}
    {{ return(adapter.dispatch('landing')(source('landing', table))) }}
{%- endmacro %}

{% macro default__landing(relation) -%}
    {{ return(relation) }}
{%- endmacro %}

{#- Spark: `landing.<table>`, the table `create_landing_tables` made over the landing zone -#}
{% macro spark__landing(relation) -%}
    {{ return(relation) }}
{%- endmacro %}

{% macro duckdb__landing(relation) -%}
    {%- set text = relation | string -%}
    {#- the home is read when the model runs, never while the project is parsed -#}
    {%- if execute and '$LANDING' in text -%}
        {%- set text = text | replace('$LANDING', env_var('FLEETLEDGER_HOME', '../data') ~ '/raw') -%}
    {%- endif -%}
    {{ return(text) }}
{%- endmacro %}

{% macro create_landing_tables() -%}
    {{ return(adapter.dispatch('create_landing_tables')()) }}
{%- endmacro %}

{% macro default__create_landing_tables() -%}{%- endmacro %}

{% macro spark__create_landing_tables() -%}
    {%- if execute -%}
        {%- set home = env_var('FLEETLEDGER_HOME', '../data') -%}
        {%- set root = env_var('FLEETLEDGER_LANDING_LOCATION', home ~ '/raw') | trim -%}
        {%- set tables = [] -%}
        {%- for node in graph.sources.values() if node.source_name == 'landing' -%}
            {%- do tables.append(node) -%}
        {%- endfor -%}
        {%- set views = [] -%}
        {%- if tables -%}
            {% do run_query('create database if not exists ' ~ tables[0].schema) %}
            {%- for row in run_query('show views in ' ~ tables[0].schema) -%}
                {%- do views.append(tables[0].schema ~ '.' ~ row['viewName']) -%}
            {%- endfor -%}
        {%- endif -%}
        {%- for node in tables -%}
            {%- set relation = node.schema ~ '.' ~ node.identifier -%}
            {%- set filename = node.meta.get('filename_column') -%}
            {%- set files = relation ~ '__files' if filename else relation -%}
            {#- a relation of an earlier layout may be a view where a table goes now -#}
            {% do run_query(('drop view ' if files in views else 'drop table if exists ') ~ files) %}
            {% do run_query(
                "create table " ~ files ~ " using parquet options ("
                ~ "path '" ~ root ~ "/" ~ node.identifier ~ "/*', "
                ~ "recursiveFileLookup 'true', mergeSchema 'true')"
            ) %}
            {%- if filename %}
                {% do run_query(
                    "create or replace view " ~ relation ~ " as select *, "
                    ~ "_metadata.file_path as " ~ filename ~ " from " ~ files
                ) %}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}
