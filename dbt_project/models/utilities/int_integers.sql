-- The integers 0 .. 99,999 (n): days and hours are generated from it, so no spread depends on
-- how many days were landed (docs/metrics.md, "The hour spine").
with

digits as (

    {{ integers(10) }}

),

final as (

    select
        cast(d1.n + d2.n * 10 + d3.n * 100 + d4.n * 1000 + d5.n * 10000 as integer) as n
    from digits as d1
    cross join digits as d2
    cross join digits as d3
    cross join digits as d4
    cross join digits as d5

)

select * from final
