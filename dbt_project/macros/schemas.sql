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

{#- on-run-start: day models the project no longer has, dropped from the day models' file so an
    upgraded home does not keep their history (gigabytes at a thousand GPUs) for nothing:
    int_sample_intervals became a CTE of int_sample_pieces. -#}
{% macro drop_retired_day_models() -%}
    {{ return(adapter.dispatch('drop_retired_day_models')()) }}
{%- endmacro %}

{% macro retired_day_models() -%}{{ return(['int_sample_intervals']) }}{%- endmacro %}

{#- Spark builds into its own warehouse folder, created after the change -#}
{% macro spark__drop_retired_day_models() -%}{%- endmacro %}

{% macro default__drop_retired_day_models() -%}
    {%- if execute -%}
        {%- for name in retired_day_models() -%}
            {% do run_query('drop table if exists ' ~ history_database() ~ '.intermediate.' ~ name) %}
        {%- endfor -%}
    {%- endif -%}
{%- endmacro %}
