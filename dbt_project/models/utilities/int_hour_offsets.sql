-- 0 .. (hours from the first to the last accounted hour - 1): spreads an interval, already
-- clipped to the accounted window, over the hours it spans. It follows the window's span, not
-- the number of accounted hours, so days missing inside the window never cut a spread short.
with

bounds as (

    select (max(hour_epoch) - min(hour_epoch)) / 3600 + 1 as span_hours
    from {{ ref('int_hours') }}

),

final as (

    select integers.n
    from {{ ref('int_integers') }} as integers
    inner join bounds
        on integers.n < bounds.span_hours

)

select * from final
