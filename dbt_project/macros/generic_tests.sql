{#- Generic tests we would otherwise take from dbt_utils (its hub is out of reach here). -#}

{#- The grain of a model: no two rows share the combination of `columns` (nulls equal, as in a
    group by). Exact, in two passes: first the 64-bit hashes of the rows' columns (`row_hash`)
    that repeat (`repeated_row_hashes`), which is far cheaper than a group-by over every key
    column (at 1,024 GPUs x 7 days of samples, 103 M rows and eight key columns, 20 s instead of
    53 s); only the rows whose hash repeats (none, or a hash collision now and then) are then
    grouped by the columns themselves, so a collision never fails the test and a real repeat
    always does.

    `not_null`: columns that must never be null, checked in the same test node (one count per
    column in one scan) where a `not_null` test each would be a node each (each test node costs
    a build about 0.1 s of dbt's own work). A failing row then says what failed (`problem`:
    `repeated key` or `null <column>`) and on how many rows (`n`; a repeated key's rows are
    `repeated_rows`, a name no model's column takes, as `n` is one of int_hour_spans'). -#}
{% test unique_combination(model, columns, not_null=[]) %}
    {%- set cols = columns | join(', ') %}
    with

    repeated_hashes as (

        {{ repeated_row_hashes(model, columns) }}

    ),

    candidates as (

        select {{ cols }}
        from {{ model }}
        where {{ row_hash(columns) }} in (select row_hash from repeated_hashes)

    ),

    repeated as (

        select {{ cols }}, count(*) as repeated_rows
        from candidates
        group by {{ cols }}
        having count(*) > 1

    )

    {%- if not not_null %}

    select * from repeated
    {%- else %},

    null_counts as (

        select
            {%- for c in not_null %}
            sum(case when {{ c }} is null then 1 else 0 end) as nulls_{{ loop.index }}{{ ',' if not loop.last }}
            {%- endfor %}
        from {{ model }}

    )

    select 'repeated key' as problem, repeated_rows as n from repeated
    {%- for c in not_null %}
    union all
    select 'null {{ c }}' as problem, nulls_{{ loop.index }} as n
    from null_counts
    where nulls_{{ loop.index }} > 0
    {%- endfor %}
    {%- endif %}
{% endtest %}

{#- The grain of a landed table read whole (a staging view over raw/<table>/): no two rows share
    `columns`. Ingest drops the rows of a partition that repeat an earlier row's key, on these
    same columns (the kind's `unique_key`; tests/telemetry/test_dcgm_unique_samples.py holds
    the two to one list), so a repeat can only join rows of two partitions of a source, and at
    least one of them then lies outside its own partition's day: a file that carries a sample
    of the day before or after (a scrape at midnight in two days' files). Only the rows at the
    times of such rows (`match_columns`, e.g. source and time) are grouped, not every landed row
    (at 1,024 GPUs x 7 days, under a second instead of 9-15 s for the 103 M landed samples).
    `time_column`: the row's time; `partition_day_epoch`: its partition's day (the epoch
    seconds of its midnight). -#}
{% test unique_landed_rows(model, columns, time_column, partition_day_epoch, match_columns) %}
    {%- set cols = columns | join(', ') %}
    with

    off_day as (

        select distinct {{ match_columns | join(', ') }}
        from {{ model }}
        where floor({{ to_epoch(time_column) }} / 86400) * 86400 <> {{ partition_day_epoch }}

    ),

    candidates as (

        select {% for c in columns %}landed.{{ c }}{{ ', ' if not loop.last }}{% endfor %}
        from (select * from {{ model }}) as landed
        inner join off_day
            on {% for c in match_columns %}off_day.{{ c }} = landed.{{ c }}{{ ' and ' if not loop.last }}{% endfor %}

    )

    select {{ cols }}, count(*) as n
    from candidates
    group by {{ cols }}
    having count(*) > 1
{% endtest %}

{#- The row hashes that occur more than once among the model's rows (a hash repeated n times may
    be returned up to n - 1 times). -#}
{% macro repeated_row_hashes(model, columns) -%}
    {{ return(adapter.dispatch('repeated_row_hashes')(model, columns)) }}
{%- endmacro %}

{#- a group-by on the hash: what a distributed engine spreads over its workers -#}
{% macro default__repeated_row_hashes(model, columns) -%}
    select {{ row_hash(columns) }} as row_hash
    from {{ model }}
    group by {{ row_hash(columns) }}
    having count(*) > 1
{%- endmacro %}

{#- Spark: the group-by, spread over the executors by hash (a global sort is one ordered
    exchange; the lag() over it would run in a single task) -#}
{% macro spark__repeated_row_hashes(model, columns) -%}
    {{ default__repeated_row_hashes(model, columns) }}
{%- endmacro %}

{#- DuckDB: the hashes sorted, each compared with the one before. A hash table of 100 M
    distinct hashes is a cache miss a row; the sort is half the time (at 1,024 GPUs x 7 days:
    the landed samples' hashes 7.8 s instead of 17.2 s, a 20.6 M-row model's 1.1 s instead of
    2.0-2.5 s, by hand on two threads) -#}
{% macro duckdb__repeated_row_hashes(model, columns) -%}
    select row_hash
    from (
        select row_hash, lag(row_hash) over (order by row_hash) as previous_hash
        from (select {{ row_hash(columns) }} as row_hash from {{ model }}) as hashes
    ) as sorted_hashes
    where row_hash = previous_hash
{%- endmacro %}

{#- one 64-bit hash of the columns' values (nulls hash too), per engine -#}
{% macro row_hash(columns) -%}
    {{ return(adapter.dispatch('row_hash')(columns)) }}
{%- endmacro %}

{% macro default__row_hash(columns) -%}hash({{ columns | join(', ') }}){%- endmacro %}

{#- Spark's hash() is 32-bit murmur3 (collisions by the thousand at 10^8 rows); xxhash64 is
    64-bit -#}
{% macro spark__row_hash(columns) -%}xxhash64({{ columns | join(', ') }}){%- endmacro %}

{#- A key column: unique and never null, in one scan and one test node where dbt's `unique` and
    `not_null` would be two (each test node costs a build about 0.1 s of dbt's own work). A
    failing row is a key value that repeats (`key_rows`: its rows) or the null key (`key_rows`:
    the rows without a key; the count's name is none of a model's columns, which a HAVING
    clause could take for it). -#}
{% test primary_key(model, column_name) %}
    select {{ column_name }} as key_value, count(*) as key_rows
    from {{ model }}
    group by {{ column_name }}
    having count(*) > 1 or {{ column_name }} is null
{% endtest %}

{% test accepted_range(model, column_name, min_value=none, max_value=none) %}
    select *
    from {{ model }}
    where
        {% if min_value is not none %}{{ column_name }} < {{ min_value }}{% else %}false{% endif %}
        or {% if max_value is not none %}{{ column_name }} > {{ max_value }}{% else %}false{% endif %}
{% endtest %}

{#- A one-row `*_recompute_from` model (macros/incremental.sql): exactly one row, whose
    `reason` is one of `reasons` (a reason misspelt, or none, fails as a row saying so). One
    test node where a grain test, not_null and accepted_values would be three (each test node
    costs a build about 0.1 s of dbt's own work). -#}
{% test one_chosen_hour(model, reasons) %}
    with

    chosen as (select from_hour, reason from {{ model }}),

    row_count as (select count(*) as n from chosen)

    select 'rows: ' || cast(n as string) as problem
    from row_count
    where n <> 1
    union all
    select 'reason: ' || coalesce(reason, 'null') as problem
    from chosen
    where reason is null or reason not in (
        {%- for r in reasons %}'{{ r }}'{% if not loop.last %}, {% endif %}{% endfor -%}
    )
{% endtest %}

{#- accepted_range over several columns of a model in one scan and one test node: each of
    `ranges` is {column, min_value, max_value} (either bound may be left out; a bound may be an
    expression over the row, such as another column). A failing row says which column is out of
    range first (`out_of_range`). -#}
{% test accepted_ranges(model, ranges) %}
    select *
    from (
        select
            case
                {%- for r in ranges %}
                when
                    {% if r.get('min_value') is not none %}{{ r['column'] }} < {{ r['min_value'] }}{% else %}false{% endif %}
                    or {% if r.get('max_value') is not none %}{{ r['column'] }} > {{ r['max_value'] }}{% else %}false{% endif %}
                    then '{{ r['column'] }}'
                {%- endfor %}
            end as out_of_range,
            checked.*
        from (select * from {{ model }}) as checked
    ) as checked_rows
    where out_of_range is not null
{% endtest %}

{% test sums_to(model, columns, total, tolerance=0.001) %}
    select *
    from {{ model }}
    where abs(({{ columns | join(' + ') }}) - {{ total }}) > {{ tolerance }}
{% endtest %}

{#- The grain of a model that keeps its parent's rows one for one (a left join on a key unique in
    the joined model, no filter): its rows number its parent's, over the same days when the run
    tests only the days it recomputed (the parent gets the same day filter). With the parent's
    own grain test this proves the model's grain, at the cost of two counts instead of a
    group-by over every key column. `parent` is the parent model's name, looked up in the graph
    rather than ref()'d: a ref would make the test a child of the parent too, and a build that
    selects the parent but not the model (`--select +other_model`) would run it on a model it
    did not build. -#}
{% test same_row_count(model, parent) %}
    {%- if execute -%}
        {%- set parents = graph.nodes.values()
            | selectattr('resource_type', 'equalto', 'model')
            | selectattr('name', 'equalto', parent) | list -%}
        {%- if parents | length != 1 -%}
            {{ exceptions.raise_compiler_error('same_row_count: no model named ' ~ parent) }}
        {%- endif -%}
        {%- set parent_relation = parents[0].relation_name -%}
    {%- else -%}
        {%- set parent_relation = model -%}
    {%- endif %}
    with

    model_rows as (select count(*) as n from {{ model }}),

    parent_rows as (select count(*) as n from {{ get_where_subquery(parent_relation) }})

    select model_rows.n as model_rows, parent_rows.n as parent_rows
    from model_rows
    cross join parent_rows
    where model_rows.n <> parent_rows.n
{% endtest %}

{#- Data tests of a run test the days it recomputed (docs/operations.md, "Incremental runs").

    The relation a generic test reads (`model` in the tests above, and dbt's own not_null,
    unique, accepted_values, relationships) is this macro's output. On top of a test's `where`
    config, a test of a day model (`meta.day_model`, set by incremental_by_day()) reads only
    the days the run recomputed, and the day before them (the most any day model rewrites
    before its range), and so does a test of a published model stored by day over the range
    (`meta.published_by_day`: fct_pue_daily, fct_xid_events); a model stored `to_last_day`: every day from the
    one it recomputed from; a test of a
    model with `meta.test_days_timestamp: <column>` (the
    sample-level staging views over the landing zone) reads only the rows whose timestamp lies
    in those days. The other days' rows are those an earlier run built and tested: a run
    changes no row of a day it does not recompute, and ingest lands only its range's days. A
    full refresh, and a dbt run without the pipeline's range (by hand), test every row. -#}

{#- (this project's `get_where_subquery` replaces dbt's, which would dispatch per adapter: the
    same on every engine; one macro, since a macro dbt calls from its own namespace does not see
    all of this project's macros; the day bounds are portable timestamp literals) -#}
{% macro get_where_subquery(relation) -%}
    {%- set conditions = [] -%}
    {%- set where = config.get('where', '') -%}
    {%- if where -%}{%- do conditions.append('(' ~ where ~ ')') -%}{%- endif -%}
    {%- set start = run_env('FLEETLEDGER_RECOMPUTE_START') -%}
    {%- set end = run_env('FLEETLEDGER_RECOMPUTE_END') -%}
    {%- if execute and not flags.FULL_REFRESH and start != '' and end != '' and model.attached_node -%}
        {%- set meta = graph.nodes[model.attached_node].config.meta or {} -%}
        {%- set one_day = modules.datetime.timedelta(days=1) -%}
        {%- set first = modules.datetime.date.fromisoformat(start[:10]) - one_day -%}
        {%- set after = modules.datetime.date.fromisoformat(end[:10]) + one_day -%}
        {%- if meta.get('to_last_day') -%}
            {#- the days from the one the model recomputed from (the one-row model that chose
                it, macros/incremental.sql); every row when it recomputed every day -#}
            {%- set recomputed_from = recompute_from_hour(meta['to_last_day']) -%}
            {%- if recomputed_from is not none -%}
                {%- do conditions.append(
                    '(' ~ (meta.get('stored_by') or 'day_epoch') ~ ' >= ' ~ recomputed_from ~ ')'
                ) -%}
            {%- endif -%}
        {%- elif meta.get('day_model') or meta.get('published_by_day') -%}
            {%- set epoch = modules.datetime.date(1970, 1, 1) -%}
            {%- do conditions.append(
                '(day_epoch >= ' ~ (first - epoch).days * 86400
                ~ ' and day_epoch < ' ~ (after - epoch).days * 86400 ~ ')'
            ) -%}
        {%- elif meta.get('test_days_timestamp') -%}
            {%- set ts = meta['test_days_timestamp'] -%}
            {%- do conditions.append(
                '(' ~ ts ~ " >= cast('" ~ first.isoformat() ~ " 00:00:00' as timestamp) and "
                ~ ts ~ " < cast('" ~ after.isoformat() ~ " 00:00:00' as timestamp))"
            ) -%}
        {%- endif -%}
    {%- endif -%}
    {%- if conditions -%}
        {%- do return('(select * from ' ~ relation ~ ' where ' ~ conditions | join(' and ') ~ ') dbt_subquery') -%}
    {%- else -%}
        {%- do return(relation) -%}
    {%- endif -%}
{%- endmacro %}
