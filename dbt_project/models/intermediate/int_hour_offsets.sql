-- 0 .. (number of hours in the window - 1): used to spread an interval over the hours it spans.
with

hours as (

    select hour_epoch from {{ ref('int_hours') }}

),

final as (

    select cast(row_number() over (order by hour_epoch) - 1 as integer) as n
    from hours

)

select * from final
