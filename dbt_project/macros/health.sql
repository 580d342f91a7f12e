{#- Adapter-specific expressions of the fleet-health, operations and spend marts. -#}

{#- continuous (linearly interpolated) percentile of expr in a group, p in [0, 1] -#}
{% macro percentile_cont(expr, p) -%}{{ return(adapter.dispatch('percentile_cont')(expr, p)) }}{%- endmacro %}
{% macro duckdb__percentile_cont(expr, p) -%}quantile_cont({{ expr }}, {{ p }}){%- endmacro %}
{% macro spark__percentile_cont(expr, p) -%}percentile({{ expr }}, {{ p }}){%- endmacro %}
{% macro default__percentile_cont(expr, p) -%}percentile_cont({{ p }}) within group (order by {{ expr }}){%- endmacro %}

{#- bitwise and of two integers -#}
{% macro bitand(a, b) -%}{{ return(adapter.dispatch('bitand')(a, b)) }}{%- endmacro %}
{% macro duckdb__bitand(a, b) -%}({{ a }} & {{ b }}){%- endmacro %}
{% macro spark__bitand(a, b) -%}({{ a }} & {{ b }}){%- endmacro %}
{% macro default__bitand(a, b) -%}({{ a }} & {{ b }}){%- endmacro %}

{#- a SQL in-list of quoted strings from a list -#}
{% macro string_list(values) -%}({% for v in values %}'{{ v }}'{% if not loop.last %}, {% endif %}{% endfor %}){%- endmacro %}
