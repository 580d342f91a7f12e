{#- Generic tests we would otherwise take from dbt_utils (its hub is out of reach here). -#}

{% test unique_combination(model, columns) %}
    select {{ columns | join(', ') }}, count(*) as n
    from {{ model }}
    group by {{ columns | join(', ') }}
    having count(*) > 1
{% endtest %}

{% test accepted_range(model, column_name, min_value=none, max_value=none) %}
    select *
    from {{ model }}
    where
        {% if min_value is not none %}{{ column_name }} < {{ min_value }}{% else %}false{% endif %}
        or {% if max_value is not none %}{{ column_name }} > {{ max_value }}{% else %}false{% endif %}
{% endtest %}

{% test sums_to(model, columns, total, tolerance=0.001) %}
    select *
    from {{ model }}
    where abs(({{ columns | join(' + ') }}) - {{ total }}) > {{ tolerance }}
{% endtest %}
