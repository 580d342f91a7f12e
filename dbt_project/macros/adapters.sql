{#- The few adapter-specific expressions, dispatched per engine. DuckDB is the default engine;
    `default__` versions are ANSI/Postgres-style and spark__ versions cover Spark SQL. -#}

{% macro to_epoch(ts) -%}{{ return(adapter.dispatch('to_epoch')(ts)) }}{%- endmacro %}
{#- microseconds / 1e6 on both engines: DuckDB's epoch() of a timestamptz is off by one ulp for
    about a quarter of sub-second times, so a difference of two of them was not Spark's -#}
{% macro duckdb__to_epoch(ts) -%}(epoch_us({{ ts }}) / 1e6){%- endmacro %}
{% macro spark__to_epoch(ts) -%}(unix_micros(cast({{ ts }} as timestamp)) / 1e6){%- endmacro %}
{% macro default__to_epoch(ts) -%}extract(epoch from {{ ts }}){%- endmacro %}

{% macro from_epoch(seconds) -%}{{ return(adapter.dispatch('from_epoch')(seconds)) }}{%- endmacro %}
{% macro duckdb__from_epoch(seconds) -%}to_timestamp({{ seconds }}){%- endmacro %}
{% macro spark__from_epoch(seconds) -%}timestamp_micros(cast(round(({{ seconds }}) * 1e6) as bigint)){%- endmacro %}
{% macro default__from_epoch(seconds) -%}to_timestamp({{ seconds }}){%- endmacro %}

{% macro regex_match(value, pattern) -%}{{ return(adapter.dispatch('regex_match')(value, pattern)) }}{%- endmacro %}
{% macro duckdb__regex_match(value, pattern) -%}regexp_matches({{ value }}, {{ pattern }}){%- endmacro %}
{% macro spark__regex_match(value, pattern) -%}({{ value }} rlike {{ pattern }}){%- endmacro %}
{% macro default__regex_match(value, pattern) -%}({{ value }} ~ {{ pattern }}){%- endmacro %}

{#- text value of key in a JSON object held as a string -#}
{% macro json_text(json_col, key) -%}{{ return(adapter.dispatch('json_text')(json_col, key)) }}{%- endmacro %}
{% macro duckdb__json_text(json_col, key) -%}json_extract_string({{ json_col }}, '$."' || {{ key }} || '"'){%- endmacro %}
{% macro spark__json_text(json_col, key) -%}get_json_object({{ json_col }}, concat('$.', {{ key }})){%- endmacro %}
{% macro default__json_text(json_col, key) -%}({{ json_col }}::json ->> {{ key }}){%- endmacro %}

{#- does a list column contain a value -#}
{% macro list_has(list_col, value) -%}{{ return(adapter.dispatch('list_has')(list_col, value)) }}{%- endmacro %}
{% macro duckdb__list_has(list_col, value) -%}list_contains({{ list_col }}, {{ value }}){%- endmacro %}
{% macro spark__list_has(list_col, value) -%}array_contains({{ list_col }}, {{ value }}){%- endmacro %}
{% macro default__list_has(list_col, value) -%}({{ value }} = any({{ list_col }})){%- endmacro %}

{#- one row per element of a list column, as a select-list expression (a generator on both
    engines): `select t.*, {{ explode_list('t.hosts') }} as host from t`; a null or empty list
    gives no row -#}
{% macro explode_list(list_col) -%}{{ return(adapter.dispatch('explode_list')(list_col)) }}{%- endmacro %}
{% macro duckdb__explode_list(list_col) -%}unnest({{ list_col }}){%- endmacro %}
{% macro spark__explode_list(list_col) -%}explode({{ list_col }}){%- endmacro %}
{% macro default__explode_list(list_col) -%}unnest({{ list_col }}){%- endmacro %}

{#- the integers 0..n-1 as a relation with column n -#}
{% macro integers(n) -%}
    {%- for i in range(n) %}
    select {{ i }} as n{% if not loop.last %} union all{% endif %}
    {%- endfor %}
{%- endmacro %}

{#- the list of fatal XIDs from vars, as a SQL in-list -#}
{% macro fatal_xids() -%}({{ var('fatal_xids') | join(', ') }}){%- endmacro %}

{#- a typed null list of integers -#}
{% macro null_int_list() -%}{{ return(adapter.dispatch('null_int_list')()) }}{%- endmacro %}
{% macro duckdb__null_int_list() -%}cast(null as integer[]){%- endmacro %}
{% macro spark__null_int_list() -%}cast(null as array<int>){%- endmacro %}
{% macro default__null_int_list() -%}cast(null as integer[]){%- endmacro %}

{#- a one-element list -#}
{% macro make_list(value) -%}{{ return(adapter.dispatch('make_list')(value)) }}{%- endmacro %}
{% macro duckdb__make_list(value) -%}list_value({{ value }}){%- endmacro %}
{% macro spark__make_list(value) -%}array({{ value }}){%- endmacro %}
{% macro default__make_list(value) -%}array[{{ value }}]{%- endmacro %}

{#- first capture group of a regex, or null -#}
{% macro regex_extract(value, pattern) -%}{{ return(adapter.dispatch('regex_extract')(value, pattern)) }}{%- endmacro %}
{% macro duckdb__regex_extract(value, pattern) -%}nullif(regexp_extract({{ value }}, {{ pattern }}, 1), ''){%- endmacro %}
{% macro spark__regex_extract(value, pattern) -%}nullif(regexp_extract({{ value }}, {{ pattern }}, 1), ''){%- endmacro %}
{% macro default__regex_extract(value, pattern) -%}substring({{ value }} from {{ pattern }}){%- endmacro %}

{#- the median of a column, as an aggregate -#}
{% macro median_of(expr) -%}{{ return(adapter.dispatch('median_of')(expr)) }}{%- endmacro %}
{% macro duckdb__median_of(expr) -%}median({{ expr }}){%- endmacro %}
{% macro spark__median_of(expr) -%}percentile({{ expr }}, 0.5){%- endmacro %}
{% macro default__median_of(expr) -%}percentile_cont(0.5) within group (order by {{ expr }}){%- endmacro %}

{#- the distinct values of a column joined by ', ' in sorted order, as an aggregate -#}
{% macro string_agg_sorted(expr) -%}{{ return(adapter.dispatch('string_agg_sorted')(expr)) }}{%- endmacro %}
{% macro duckdb__string_agg_sorted(expr) -%}string_agg(distinct {{ expr }}, ', ' order by {{ expr }}){%- endmacro %}
{% macro spark__string_agg_sorted(expr) -%}array_join(array_sort(collect_set({{ expr }})), ', '){%- endmacro %}
{% macro default__string_agg_sorted(expr) -%}string_agg(distinct {{ expr }}, ', ' order by {{ expr }}){%- endmacro %}

{#- a UTC timestamp as text, 'YYYY-MM-DD HH:MM:SS' on every engine (a cast to string adds
    DuckDB's '+00' offset, Spark's none): for messages -#}
{% macro timestamp_text(ts) -%}{{ return(adapter.dispatch('timestamp_text')(ts)) }}{%- endmacro %}
{% macro duckdb__timestamp_text(ts) -%}strftime({{ ts }}, '%Y-%m-%d %H:%M:%S'){%- endmacro %}
{% macro spark__timestamp_text(ts) -%}date_format({{ ts }}, 'yyyy-MM-dd HH:mm:ss'){%- endmacro %}
{% macro default__timestamp_text(ts) -%}to_char({{ ts }}, 'YYYY-MM-DD HH24:MI:SS'){%- endmacro %}

{#- the non-null values of a column as a list sorted ascending, as an aggregate -#}
{% macro sorted_values(expr) -%}{{ return(adapter.dispatch('sorted_values')(expr)) }}{%- endmacro %}
{% macro duckdb__sorted_values(expr) -%}list_sort(list({{ expr }}) filter (where {{ expr }} is not null)){%- endmacro %}
{% macro spark__sorted_values(expr) -%}sort_array(collect_list({{ expr }})){%- endmacro %}
{% macro default__sorted_values(expr) -%}array_agg({{ expr }} order by {{ expr }}) filter (where {{ expr }} is not null){%- endmacro %}

{#- the list's element at a 1-based position, null outside the list (0 included) -#}
{% macro list_at(list_col, position) -%}{{ return(adapter.dispatch('list_at')(list_col, position)) }}{%- endmacro %}
{% macro duckdb__list_at(list_col, position) -%}{{ list_col }}[cast({{ position }} as bigint)]{%- endmacro %}
{#- Spark's element_at refuses position 0 even in its try_ form -#}
{% macro spark__list_at(list_col, position) -%}case when {{ position }} >= 1 then try_element_at({{ list_col }}, cast({{ position }} as int)) end{%- endmacro %}
{% macro default__list_at(list_col, position) -%}{{ list_col }}[cast({{ position }} as integer)]{%- endmacro %}

{#- A GPU unit's integer key: a 64-bit hash of its UUID and MIG instance ('' for a whole GPU),
    computed once, in int_gpu_samples. The sample-grain tables after it (int_sample_pieces)
    sort and join on it instead of the text: the text in the rows a window sorts is what costs
    (docs/performance.md). int_gpu_unit_keys maps it back, and tests that no two units share
    one. A hash is the same only within one engine version: a build with another version
    rebuilds every day (fleetledger/incremental.py, the `warehouse engine` input). -#}
{% macro unit_key(gpu_uuid, mig_instance) -%}{{ row_hash([gpu_uuid, mig_instance]) }}{%- endmacro %}
