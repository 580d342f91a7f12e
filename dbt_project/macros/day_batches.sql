{#- Day batches: a heavy day model built over many days in batches of days (DuckDB).

    A day model computes the days of a run's range in one statement; on a full build, every
    day of the history at once. Its largest steps (the pivot of the long DCGM rows, the windows
    over every sample of a GPU) hold what they read in memory, so a full build of a week of
    1,024 GPUs took 6 GiB for the pivot alone, and a year would take fifty times that or spill
    it to disk. A model built with `incremental_by_day(day_batches=true)` instead runs its SQL
    once per batch of days (the `day_batches` materialization below, DuckDB only): each
    statement reads and writes one batch, so the memory a build needs follows the size of a
    batch, not the length of the history (docs/performance.md, "Memory and threads").

    A day's rows depend only on that day's rows upstream and on the rows just before and after
    it (the last sample before midnight, the first after it): the rule every day model keeps,
    since a daily run recomputes one day. A batch therefore computes exactly its days, reading
    their neighbours from the upstream models, which hold every day already. A run over a range
    of days runs them a day at a time (the range, widened by the model's `days_before`); a full
    build runs the batches the pipeline chose (FLEETLEDGER_DAY_BATCHES, the first day of each:
    consecutive accounted days grouped up to `warehouse.day_batch_rows` landed DCGM rows, 16 M
    by default, `day_batches` in
    fleetledger/incremental.py; a day of 1,024 GPUs at 30 s is a batch, a month of 128 GPUs at
    60 s another), the first batch open towards the past and the last towards the future, so
    no row is left out whatever the list says. Larger batches also leave fewer partly filled
    row groups, which DuckDB merges at the next checkpoint that deletes from the table (the
    first daily run after the full build). A run of one day, dbt by hand (no such variables) and
    Spark (which spreads a statement over its workers) run the model's SQL once, as before.

    A batch's bounds reach the SQL as two DuckDB variables (`fleetledger_day_from`,
    `fleetledger_day_to`: epoch seconds) that the materialization sets before each batch; the
    range macros (macros/incremental.sql) write `getvariable(...)` in place of the range's
    numbers when the model is built in batches, so its compiled SQL shows which it was. -#}

{#- the [from, to) epoch-second bounds of the batches this build of the model runs one by one,
    or none: the SQL runs once (not a batched model, not DuckDB, one day or one batch) -#}
{% macro day_batches() -%}
    {%- if not execute or not (model.config.meta or {}).get('day_batches') -%}
        {{ return(none) }}
    {%- endif -%}
    {{ return(adapter.dispatch('day_batches')()) }}
{%- endmacro %}

{% macro default__day_batches() -%}{{ return(none) }}{%- endmacro %}

{#- Spark runs a model's statement over its workers and overwrites the day partitions it
    writes: one statement, whatever the days -#}
{% macro spark__day_batches() -%}{{ return(none) }}{%- endmacro %}

{% macro duckdb__day_batches() -%}
    {%- if model.config.materialized != 'day_batches' -%}{{ return(none) }}{%- endif -%}
    {%- set days = recompute_range() -%}
    {%- if days is not none -%}
        {#- an incremental run: the range and the days before it the model rewrites -#}
        {%- set first = days[0] - (model.config.meta.get('days_before') or 0) * 86400 -%}
        {%- set last = days[1] -%}
    {%- else -%}
        {#- a full build: the batches the pipeline chose over the accounted days, the first open
            to the past and the last to the future -#}
        {%- set starts = run_env('FLEETLEDGER_DAY_BATCHES').split(',') | reject('equalto', '') | list -%}
        {%- if starts | length < 2 -%}{{ return(none) }}{%- endif -%}
        {%- set bounds = [-day_batch_open_end()] -%}
        {%- for start in starts[1:] -%}{%- do bounds.append(day_epoch_of(start)) -%}{%- endfor -%}
        {%- do bounds.append(day_batch_open_end()) -%}
        {%- set batches = [] -%}
        {%- for i in range(bounds | length - 1) -%}
            {%- do batches.append([bounds[i], bounds[i + 1]]) -%}
        {%- endfor -%}
        {{ return(batches) }}
    {%- endif -%}
    {%- if last <= first -%}{{ return(none) }}{%- endif -%}
    {%- set batches = [] -%}
    {%- for day in range(first, last + 86400, 86400) -%}
        {%- do batches.append([day, day + 86400]) -%}
    {%- endfor -%}
    {{ return(batches) }}
{%- endmacro %}

{#- the bound of an open first or last batch (epoch seconds, about the year 5138 and 1200 BC):
    beyond any landed time, and a timestamp DuckDB can still write -#}
{% macro day_batch_open_end() -%}{{ return(100000000000) }}{%- endmacro %}

{#- the batch's first (`from`) or after-last (`to`) second, for the SQL -#}
{% macro day_batch_bound(which) -%}
    {{ return(adapter.dispatch('day_batch_bound')(which)) }}
{%- endmacro %}

{% macro duckdb__day_batch_bound(which) -%}getvariable('fleetledger_day_{{ which }}'){%- endmacro %}

{% macro spark__day_batch_bound(which) -%}
    {%- do exceptions.raise_compiler_error('Spark builds a day model in one statement: no day batch') -%}
{%- endmacro %}

{#- dbt's is_incremental(), which also counts a model built in day batches: it is an
    incremental model whose rows of the days it recomputes are replaced (this project's macro
    replaces dbt's, which knows the `incremental` materialization only) -#}
{% macro is_incremental() -%}
    {%- if not execute -%}{{ return(false) }}{%- endif -%}
    {%- set relation = adapter.get_relation(this.database, this.schema, this.table) -%}
    {{ return(
        relation is not none
        and relation.type == 'table'
        and model.config.materialized in ('incremental', 'day_batches')
        and not should_full_refresh()
    ) }}
{%- endmacro %}

{#- The materialization of every model stored by day on DuckDB (Spark keeps dbt's
    `incremental` with partition overwrite: macros/incremental.sql). Incremental: the pre-hook
    empties the recomputed days (clear_recomputed_days), then the model's SQL inserts their rows,
    once per batch of days for a model built in day batches, once otherwise. A first or full
    build of one batch replaces the table in one statement (`create or replace table`); of
    several, writes the batches into a new table, which replaces the old one when all are in.
    The columns must stay those of the stored table (as `on_schema_change: fail`): a model whose
    columns changed is rebuilt in full (`fleetledger run --full-refresh`).

    dbt-duckdb's `incremental` with `delete+insert`, which these models used before, wrote the
    new rows to a temporary table, compared its columns with the stored table's twice, deleted
    the days found in it and inserted: some ten statements a model and their Jinja, where the
    pre-hook had emptied those days already (docs/performance.md). -#}
{% materialization day_batches, adapter='duckdb' %}
    {%- set existing = load_cached_relation(this) -%}
    {%- set target = this.incorporate(type='table') -%}
    {%- set incremental = existing is not none and existing.is_table and not should_full_refresh() -%}
    {%- set batches = day_batches() or [none] -%}
    {%- set in_place = incremental or batches | length == 1 -%}
    {%- set intermediate = make_intermediate_relation(target) -%}
    {%- set backup = make_backup_relation(target, 'table' if existing is none else existing.type) -%}
    {%- set building = target if in_place else intermediate -%}
    {%- if not in_place -%}
        {{ drop_relation_if_exists(load_cached_relation(intermediate)) }}
        {{ drop_relation_if_exists(load_cached_relation(backup)) }}
    {%- endif -%}

    {{ run_hooks(pre_hooks, inside_transaction=False) }}
    {{ run_hooks(pre_hooks, inside_transaction=True) }}

    {%- for batch in batches -%}
        {%- if batch is not none -%}
            {%- do run_query('set variable fleetledger_day_from = ' ~ batch[0]) -%}
            {%- do run_query('set variable fleetledger_day_to = ' ~ batch[1]) -%}
        {%- endif -%}
        {%- if incremental and loop.first -%}
            {{ day_batches_same_columns(existing, compiled_code) }}
        {%- endif -%}
        {%- call statement('main' if loop.last else 'day_batch') -%}
            {%- if incremental or not loop.first -%}
                insert into {{ building }} by name ({{ compiled_code }})
            {%- elif in_place -%}
                {{ fleetledger_create_or_replace_sql('table', existing, building, compiled_code) }}
            {%- else -%}
                {{ create_table_as(false, building, compiled_code) }}
            {%- endif -%}
        {%- endcall -%}
    {%- endfor -%}

    {%- if not in_place -%}
        {%- if existing is not none -%}
            {%- do adapter.rename_relation(existing, backup) -%}
        {%- endif -%}
        {%- do adapter.rename_relation(intermediate, target) -%}
    {%- endif -%}

    {{ run_hooks(post_hooks, inside_transaction=True) }}
    {%- do adapter.commit() -%}
    {%- if not in_place and existing is not none -%}
        {%- do adapter.drop_relation(backup) -%}
    {%- endif -%}
    {{ run_hooks(post_hooks, inside_transaction=False) }}
    {{ return({'relations': [target]}) }}
{% endmaterialization %}

{#- stop before inserting into a stored day model whose columns are not the SQL's -#}
{% macro day_batches_same_columns(existing, sql) -%}
    {%- set stored = adapter.get_columns_in_relation(existing) | map(attribute='name') | map('lower') | list -%}
    {%- set now = get_columns_in_query(sql) | map('lower') | list -%}
    {%- if stored | sort != now | sort -%}
        {%- do exceptions.raise_compiler_error(
            'the columns of ' ~ this ~ ' changed (stored: ' ~ stored | sort | join(', ')
            ~ '; now: ' ~ now | sort | join(', ') ~ '); rebuild it: fleetledger run --full-refresh'
        ) -%}
    {%- endif -%}
{%- endmacro %}
