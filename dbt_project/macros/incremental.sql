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
    passes the same number to the range macros below.

    `day_batches`: on DuckDB, a build over several days runs the model's SQL once per day
    (macros/day_batches.sql): for the sample-grain models, whose memory would otherwise grow
    with the days a build covers.

    `to_last_day`: the model rewrites every day from a first day on, not the range only (a
    day's rows carry something from the days before it however far back, as an hour without a
    MIG report keeps the last report's layout: int_gpu_units): the name of the one-row model
    that chose that day (`from_hour`, `reason`). Its tests then read those days
    (`meta.to_last_day`, macros/generic_tests.sql). -#}

{% macro incremental_by_day(
    day_column='day_epoch', days_before=0, to_last_day=false, day_batches=false
) -%}
    {%- set meta = {
        'day_model': true, 'days_before': days_before, 'to_last_day': to_last_day,
        'day_batches': day_batches
    } -%}
    {{ return(adapter.dispatch('stored_by_day')(day_column, meta, in_history=true)) }}
{%- endmacro %}

{#- The config of a model stored by day, per engine: a day model (`in_history`: on DuckDB in
    the day models' own file) or a published model stored by day (incremental_published_by_day,
    below) -#}
{% macro default__stored_by_day(day_column, meta, in_history) -%}
    {%- if in_history -%}{{ config(database=history_database()) }}{%- endif -%}
    {{ config(
        materialized='day_batches' if target.type == 'duckdb'
            else 'incremental',
        incremental_strategy=fleetledger_incremental_strategy(),
        unique_key=day_column,
        on_schema_change='fail',
        pre_hook=clear_recomputed_days_hook(day_column, meta),
        meta=meta
    ) }}
{%- endmacro %}

{#- The hook that empties the days a run recomputes before their new rows go in (both
    strategies replace only the days the new rows fall in: a recomputed day that now has no
    row, such as a day whose only run the scheduler withdrew, would keep its old rows). -#}
{% macro clear_recomputed_days_hook(day_column, meta) -%}
    {%- set to_last_day = meta.get('to_last_day') or none -%}
    {{- return(
        "{{ clear_recomputed_days('" ~ day_column ~ "', " ~ (meta.get('days_before') or 0)
        ~ ", " ~ ("'" ~ to_last_day ~ "'" if to_last_day else "none") ~ ") }}"
    ) -}}
{%- endmacro %}

{#- The days a run recomputes as [from, to) epoch seconds of midnights (`to` none: every later
    day), or none when it recomputes every day; what the model's own SQL rewrites: the range
    and `days_before` days before it, or from the first day `to_last_day` chose -#}
{% macro recomputed_day_bounds(days_before, to_last_day) -%}
    {%- if to_last_day -%}
        {%- set from_hour = recompute_from_hour(to_last_day) -%}
        {{ return(none if from_hour is none else [from_hour, none]) }}
    {%- endif -%}
    {%- set days = recompute_range() -%}
    {{ return(none if days is none else [days[0] - days_before * 86400, days[1] + 86400]) }}
{%- endmacro %}

{#- The statement that empties the recomputed days of an incremental model (nothing on its
    first build), per engine -#}
{% macro clear_recomputed_days(day_column, days_before, to_last_day) -%}
    {%- if not execute or not is_incremental() -%}{{ return('') }}{%- endif -%}
    {{ return(adapter.dispatch('clear_recomputed_days')(
        day_column, recomputed_day_bounds(days_before, to_last_day)
    )) }}
{%- endmacro %}

{% macro default__clear_recomputed_days(day_column, bounds) -%}
    delete from {{ this }}
    {%- if bounds is not none %}
    where {{ day_column }} >= {{ bounds[0] }}
        {%- if bounds[1] is not none %} and {{ day_column }} < {{ bounds[1] }}{% endif %}
    {%- endif %}
{%- endmacro %}

{#- Spark drops the recomputed day partitions (by the values `show partitions` lists, so that
    a day column of any type matches) -#}
{% macro spark__clear_recomputed_days(day_column, bounds) -%}
    {%- set specs = [] -%}
    {%- for row in run_query('show partitions ' ~ this) -%}
        {%- set value = row[0].split('=', 1)[1] -%}
        {%- set day = value | float -%}
        {%- if bounds is none or (day >= bounds[0] and (bounds[1] is none or day < bounds[1])) -%}
            {%- do specs.append("partition (" ~ day_column ~ " = '" ~ value ~ "')") -%}
        {%- endif -%}
    {%- endfor -%}
    {%- if specs -%}
    alter table {{ this }} drop if exists {{ specs | join(', ') }}
    {%- endif -%}
{%- endmacro %}

{#- DuckDB keeps the day models in a database file of their own, `build/history.duckdb`, which
    profiles.yml attaches under this name beside the build warehouse: the history they hold
    (every sample of every day) is never copied, neither by publish nor as the state a failed
    build goes back to (fleetledger/publish.py, docs/operations.md "Where the build keeps its
    history"); the published snapshot holds everything else. -#}
{% macro history_database() -%}history{%- endmacro %}

{#- Spark overwrites the recomputed day partitions (partitionOverwriteMode=dynamic, set in the
    spark profile), day models and marts alike (one Spark warehouse) -#}
{% macro spark__stored_by_day(day_column, meta, in_history) -%}
    {{ config(
        materialized='incremental',
        incremental_strategy=fleetledger_incremental_strategy(),
        partition_by=[day_column],
        file_format='parquet',
        on_schema_change='fail',
        pre_hook=clear_recomputed_days_hook(day_column, meta),
        post_hook="{{ spark_schema_file() }}",
        meta=meta
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
    {{ return([day_epoch_of(start), day_epoch_of(end)]) }}
{%- endmacro %}

{#- the midnight (UTC, epoch seconds) of a day given as YYYY-MM-DD[...] -#}
{% macro day_epoch_of(iso_day) -%}
    {%- set epoch = modules.datetime.date(1970, 1, 1) -%}
    {{ return((modules.datetime.date.fromisoformat(iso_day[:10]) - epoch).days * 86400) }}
{%- endmacro %}

{#- a condition true for the days this run recomputes: `day_epoch` is an epoch-seconds
    expression of a UTC midnight; `days_before` widens the range by that many days before its
    first (a model whose day rows depend on the next day's first samples rewrites the day
    before the range too) -#}
{% macro in_recomputed_days(day_epoch, days_before=0) -%}
    {%- set days = recompute_range() -%}
    {%- if day_batches() is not none -%}
        ({{ day_epoch }} >= {{ day_batch_bound('from') }}
            and {{ day_epoch }} < {{ day_batch_bound('to') }})
    {%- elif days is none -%}
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
    {%- if day_batches() is not none -%}
        ({{ ts }} >= {{ from_epoch(day_batch_bound('from')) }}
            and {{ ts }} < {{ from_epoch(day_batch_bound('to')) }})
    {%- elif days is none -%}
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
    {%- if day_batches() is not none -%}{{ return(day_batch_bound('from')) }}{%- endif -%}
    {{- -1e18 if days is none else days[0] - days_before * 86400 -}}
{%- endmacro %}

{#- the midnight after the last recomputed day (epoch seconds); later than any sample when
    every day is recomputed -#}
{% macro after_recomputed_epoch() -%}
    {%- set days = recompute_range() -%}
    {%- if day_batches() is not none -%}{{ return(day_batch_bound('to')) }}{%- endif -%}
    {{- 1e18 if days is none else days[1] + 86400 -}}
{%- endmacro %}

{#- How an incremental model replaces the days a run rebuilds, per engine (docs/scaling.md):
    DuckDB deletes the rebuilt days' rows and inserts the new ones (the models stored by day
    use the project's `day_batches` materialization, macros/day_batches.sql, whose pre-hook
    deletes; `delete+insert` on the model's unique key is the strategy of any other incremental
    model); Spark overwrites the rebuilt day partitions of a Parquet table
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

{#- The first day of the run's range (epoch seconds of its midnight), or none on a full build,
    without a range (dbt by hand) and while dbt parses: what the models stored from a first day on
    start from unless their inputs say earlier (int_gpu_units_recompute_from) -#}
{% macro run_range_start() -%}
    {%- set start = run_env('FLEETLEDGER_RECOMPUTE_START') -%}
    {%- if not execute or flags.FULL_REFRESH or start == '' -%}{{ return(none) }}{%- endif -%}
    {{ return(day_epoch_of(start)) }}
{%- endmacro %}

{#- The first hour a model stored from a first day on recomputes (epoch seconds), read from the
    one-row model that chose it (`from_model`: int_gpu_units_recompute_from,
    int_gpu_hour_states_recompute_from, int_node_hour_costs_recompute_from or
    int_spend_recompute_from, built before the model and its tests); none for every hour: on a full build, while dbt parses, and when the
    model itself is built whole -#}
{% macro recompute_from_hour(from_model, incremental=true) -%}
    {%- if not execute or not incremental -%}{{ return(none) }}{%- endif -%}
    {%- set value = run_query('select from_hour from ' ~ model_relation(from_model)).columns[0].values()[0] -%}
    {{ return(none if value is none else (value | int)) }}
{%- endmacro %}

{#- The first hour a model stored from a first day on recomputes, for its SQL: as
    recompute_from_hour (read from `from_model`), -1e18 (every hour) when that says every hour
    or the model is built whole -#}
{% macro first_recomputed_hour(from_model) -%}
    {%- set value = recompute_from_hour(from_model, is_incremental()) -%}
    {{ return(-1e18 if value is none else value) }}
{%- endmacro %}

{#- The choice of a one-row `*_recompute_from` model that compares nothing (the body of its
    final CTE): every hour, on a full build (`range_start` none: the copies an older version
    left may have other columns) or when no earlier build left the inputs to compare with -#}
{% macro no_comparison_choice(range_start) -%}
    select
        cast(null as bigint) as from_hour,
        '{{ "full build" if range_start is none else "no earlier build" }}' as reason
{%- endmacro %}

{#- The choice of a one-row `*_recompute_from` model that starts from an earlier chooser's
    (the CTE `chosen_before`: from_hour, reason) and compares nothing (the body of its final
    CTE): every hour, saying why (the earlier chooser's reason when that was every hour too:
    a full build, the GPUs changed; else `no earlier build`: no copy of its inputs to compare
    with) -#}
{% macro uncompared_choice(chosen_before) -%}
    select
        cast(null as bigint) as from_hour,
        case when from_hour is null then reason else 'no earlier build' end as reason
    from {{ chosen_before }}
{%- endmacro %}

{#- The choice of a one-row `*_recompute_from` model that starts from an earlier choice (the CTE
    `chosen_before`: from_hour, reason) or earlier, on the day of the first changed input (the
    CTE `differences`: one row, `first_changed` in epoch seconds, null when nothing before the
    earlier choice changed), saying `reason` then: the body of its final CTE -#}
{% macro first_change_choice(chosen_before, reason) -%}
    select
        cast(case
            when differences.first_changed is null then {{ chosen_before }}.from_hour
            else floor(differences.first_changed / 86400) * 86400
        end as bigint) as from_hour,
        case
            when differences.first_changed is null then {{ chosen_before }}.reason
            else '{{ reason }}'
        end as reason
    from {{ chosen_before }}
    cross join differences
{%- endmacro %}

{#- The choice of a one-row `*_recompute_from` model that follows int_gpu_hour_states' (the CTE
    `states_from`) or starts earlier, on the day of the first moment a run changed (the CTE
    `changed_runs`: a row per changed run, `changed_from` in epoch seconds; none: no run
    changed): the body of its final CTE. Every hour when the states' choice is every hour. -#}
{% macro states_or_runs_choice(changed_runs) -%}
    select
        cast(case
            when states_from.from_hour is null then null
            else least(states_from.from_hour, coalesce(first_change.run_day, states_from.from_hour))
        end as bigint) as from_hour,
        case
            when states_from.from_hour is null then states_from.reason
            when first_change.run_day < states_from.from_hour then 'runs changed'
            else states_from.reason
        end as reason
    from states_from
    cross join (
        select floor(min(changed_from) / 86400) * 86400 as run_day from {{ changed_runs }}
    ) as first_change
{%- endmacro %}

{#- The rows in one of two relations (CTEs) of the same columns and not in the other, both
    ways: what changed between the inputs a model stored from a first day on was last built from
    (`built`) and this run's (`now`), restricted by `where`. A subquery:
    `from {{ changed_input_rows('now_inputs', 'built_inputs') }}` -#}
{% macro changed_input_rows(now, built, where='true') -%}
    (
        (
            select * from {{ now }} where {{ where }}
            except
            select * from {{ built }} where {{ where }}
        )
        union all
        (
            select * from {{ built }} where {{ where }}
            except
            select * from {{ now }} where {{ where }}
        )
    ) as changed_rows
{%- endmacro %}

{#- A model an earlier build of this project left, as a relation (none if there is none): what
    a model compares its inputs with without depending on it (it is built after the model) -#}
{% macro built_relation(name) -%}
    {%- set relation = model_relation(name) -%}
    {{ return(adapter.get_relation(
        database=relation.database, schema=relation.schema, identifier=relation.identifier
    )) }}
{%- endmacro %}

{#- A published model stored by day (the marts fct_gpu_hours and fct_run_gpu_hours, and
    int_run_gpu_hour_costs, which the alerts read from the published snapshot): like a day
    model's config, but the model stays in the build warehouse the publish step copies; a run
    rewrites the days from the first hour `to_last_day` chose on, and the model's tests read
    those days (`meta.to_last_day`). `day_column` may be another partition: the bill lines are
    stored by `billing_period_epoch` (macros/billing_periods.sql), and their tests read the
    periods from the chosen one on (`meta.stored_by`). With `to_last_day=none` (fct_pue_daily) a run rewrites the
    days of its range and `days_before` days before it, as a day model does, and the tests read
    the days a day model's do (`meta.published_by_day`). -#}
{% macro incremental_published_by_day(day_column='day_epoch', to_last_day='int_gpu_hour_states_recompute_from', days_before=0) -%}
    {%- if to_last_day -%}
        {%- set meta = {'to_last_day': to_last_day, 'stored_by': day_column} -%}
    {%- else -%}
        {%- set meta = {'published_by_day': true, 'days_before': days_before} -%}
    {%- endif -%}
    {{ return(adapter.dispatch('stored_by_day')(day_column, meta, in_history=false)) }}
{%- endmacro %}

{#- A model of this project as a relation, for a macro a data test also calls (a test's SQL
    may not ref a model its node does not depend on): `ref()` while dbt parses (the calling
    model depends on it), the relation of its node when it executes -#}
{% macro model_relation(name) -%}
    {%- if not execute -%}{{ return(ref(name)) }}{%- endif -%}
    {%- set node = graph.nodes['model.' ~ project_name ~ '.' ~ name] -%}
    {{ return(api.Relation.create(database=node.database, schema=node.schema, identifier=node.alias)) }}
{%- endmacro %}
