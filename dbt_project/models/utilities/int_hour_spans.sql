-- The pairs (span, n) of hour offsets with n <= span < 24: joined on `span` to an interval that
-- reaches `span` hours past its first (macro `spread_periods`), they give the offsets 0 .. span
-- of the hours it overlaps by an equality join, for intervals cut at midnight (never more than
-- 23 hours past the first: int_sample_pieces). A table of its own, not a CTE of the model that
-- joins it: inlined there, DuckDB's planner joined the day's 3 M intervals to the offsets by
-- a range join (`offsets.n <= span`) instead of first building these few hundred rows.
with

offsets as (

    select n from {{ ref('int_hour_offsets') }}

),

final as (

    select spans.n as span, offsets.n
    from offsets as spans
    inner join offsets
        on offsets.n <= spans.n
    where spans.n < 24

)

select * from final
