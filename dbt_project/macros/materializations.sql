{#- DuckDB's table and view materializations, in one statement each.

    dbt-duckdb builds a table as `<name>__dbt_tmp`, renames the old table to a backup, renames
    the new one into place and drops the backup, after asking the catalog about foreign keys
    and indexes: about ten statements and their Jinja for every table of every build, and a
    build's time is mostly that per-node work, not DuckDB's (docs/performance.md). Here a table
    is `create or replace table ... as (...)` and a view `create or replace view ... as ...`,
    which DuckDB swaps in one transaction: readers see the old relation or the new one, never
    none, as with the rename. A relation of the other type under the name (a view where a
    table goes now) is dropped first, in the same transaction.

    The project's models use none of what the adapter's versions handle besides (contracts,
    grants, indexes, foreign keys, persisted docs, Python models): a model that asks for one
    fails here, by name, instead of being built without it. Spark keeps dbt-spark's own. -#}

{% macro fleetledger_check_materialization_config() -%}
    {%- set unsupported = [] -%}
    {%- if model.get('language', 'sql') != 'sql' -%}
        {%- do unsupported.append('language ' ~ model.language) -%}
    {%- endif -%}
    {%- if config.get('contract') and config.get('contract').enforced -%}
        {%- do unsupported.append('contract') -%}
    {%- endif -%}
    {%- for key in ['grants', 'indexes', 'persist_docs'] -%}
        {%- if config.get(key) -%}{%- do unsupported.append(key) -%}{%- endif -%}
    {%- endfor -%}
    {%- if unsupported -%}
        {{ exceptions.raise_compiler_error(
            model.name ~ ": the project's DuckDB " ~ config.get('materialized')
            ~ " materialization (macros/materializations.sql) does not handle "
            ~ unsupported | join(', ')
        ) }}
    {%- endif -%}
{%- endmacro %}

{#- Drop `existing` (a cached relation, or none) when it is not of `relation_type`, then the
    statement that replaces `target` with `sql` in one go; also the `day_batches`
    materialization's first or full build of one batch (macros/day_batches.sql) -#}
{% macro fleetledger_create_or_replace_sql(relation_type, existing, target, sql) -%}
    {%- if existing is not none and existing.type != relation_type -%}
        {%- do adapter.drop_relation(existing) -%}
    {%- endif -%}
    create or replace {{ relation_type }} {{ target }} as (
        {{ sql }}
    )
{%- endmacro %}

{% macro fleetledger_replace_relation(relation_type) -%}
    {%- do fleetledger_check_materialization_config() -%}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type=relation_type) -%}
    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}
    {%- set replace_sql = fleetledger_create_or_replace_sql(relation_type, existing, target, sql) -%}
    {% call statement('main') -%}
        {{ replace_sql }}
    {%- endcall %}
    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {{ adapter.commit() }}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target]}) }}
{%- endmacro %}

{% materialization table, adapter='duckdb' %}
    {{ return(fleetledger_replace_relation('table')) }}
{% endmaterialization %}

{% materialization view, adapter='duckdb' %}
    {{ return(fleetledger_replace_relation('view')) }}
{% endmaterialization %}
