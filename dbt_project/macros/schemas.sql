{#- Where each layer is published (dbt_project.yml): staging views in schema `staging`,
    intermediate and utilities relations in schema `intermediate`, marts in the target schema
    (`main` on DuckDB), so that schema holds the marts and nothing else. dbt's default
    concatenates target and custom schema (`main_staging`); here a custom schema is used as-is. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}

{#- on-run-start: a warehouse built before the layers had schemas of their own holds its staging,
    intermediate and utility relations in the target schema; drop each relation there that is
    named after one of this project's models published in another schema, so the target schema
    keeps only the marts. Nothing else is touched: a name that is no model of the project, or a
    model that is published in the target schema, stays. -#}
{% macro drop_relations_moved_out_of_target_schema() -%}
    {{ return(adapter.dispatch('drop_relations_moved_out_of_target_schema')()) }}
{%- endmacro %}

{#- a Spark warehouse never had that layout (and each look-up there is a catalog query) -#}
{% macro spark__drop_relations_moved_out_of_target_schema() -%}{%- endmacro %}

{% macro default__drop_relations_moved_out_of_target_schema() %}
    {%- if execute -%}
        {%- for node in graph.nodes.values()
            if node.resource_type == 'model'
            and node.schema != target.schema
            and node.config.materialized != 'ephemeral' -%}
            {#- the target database, whose relations dbt has listed: a look-up that misses
                its cache opens a transaction the hook never commits, undoing later drops -#}
            {%- set stale = adapter.get_relation(
                database=target.database, schema=target.schema, identifier=node.alias) -%}
            {%- if stale is not none -%}
                {{ log('dropping ' ~ stale ~ ': ' ~ node.name ~ ' is published in schema ' ~ node.schema, info=true) }}
                {% do adapter.drop_relation(stale) %}
            {%- endif -%}
        {%- endfor -%}
        {#- a day model built before the day models had a database of their own
            (`history_database`) is still in the build warehouse: dropped there, so the
            published snapshot holds no copy of it -#}
        {%- for node in graph.nodes.values()
            if node.resource_type == 'model'
            and node.database != target.database -%}
            {%- set stale = adapter.get_relation(
                database=target.database, schema=node.schema, identifier=node.alias) -%}
            {%- if stale is not none -%}
                {{ log('dropping ' ~ stale ~ ': ' ~ node.name ~ ' is kept in database ' ~ node.database, info=true) }}
                {% do adapter.drop_relation(stale) %}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{% endmacro %}

{#- on-run-start: the tables and views of the schemas only this project's models write
    (`staging`, `intermediate`), in the build warehouse and the day models' file, that no model
    of the project builds any more, dropped: a model an upgrade removed or renamed
    (`int_sample_intervals` became a CTE of int_sample_pieces, `int_spend_inputs` became
    int_spend_line_inputs and int_spend_run_inputs) would otherwise keep its last rows there,
    and in every published snapshot, with no model to trace them to (and a day model's history
    is gigabytes at a thousand GPUs); so would a `__dbt_tmp` table a killed build left. The
    target schema (`main`) is not touched: the forecast and alert steps write tables there. -#}
{% macro drop_retired_relations() -%}
    {{ return(adapter.dispatch('drop_retired_relations')()) }}
{%- endmacro %}

{#- Spark builds into its own warehouse folder, created after these changes -#}
{% macro spark__drop_retired_relations() -%}{%- endmacro %}

{% macro default__drop_retired_relations() -%}{%- endmacro %}

{% macro duckdb__drop_retired_relations() -%}
    {%- if execute -%}
        {%- set built = [] -%}
        {%- for node in graph.nodes.values()
            if node.resource_type in ('model', 'seed', 'snapshot') -%}
            {%- do built.append((node.database ~ '.' ~ node.schema ~ '.' ~ node.alias) | lower) -%}
        {%- endfor -%}
        {%- set found = run_query(
            "select database_name, schema_name, table_name, 'table' from duckdb_tables() "
            ~ "union all select database_name, schema_name, view_name, 'view' "
            ~ "from duckdb_views() where not internal order by all") -%}
        {%- for row in found.rows
            if row[0] in (target.database, history_database())
            and row[1] in ('staging', 'intermediate') -%}
            {%- set name = row[0] ~ '.' ~ row[1] ~ '.' ~ row[2] -%}
            {%- if name | lower not in built -%}
                {{ log('dropping ' ~ name ~ ': no model of this project builds it', info=true) }}
                {% do run_query('drop ' ~ row[3] ~ ' if exists "' ~ row[0] ~ '"."' ~ row[1]
                    ~ '"."' ~ row[2] ~ '"') %}
            {%- endif -%}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}
