-- The first billing period the bill-line models stored by billing period recompute in this run
-- (one row; macros/billing_periods.sql): `from_hour`, the period's first UTC midnight, epoch
-- seconds; null for every period. The period of the day before the run's range (the rate-card
-- lines of the range's days and of the day before it: their energy and PUE), or an earlier one
-- whose inputs differ from those the last build read (int_billing_line_inputs): a period
-- landed again since ('bill landed again': a CUR redelivery, a restated month; ingest lands
-- only the periods of a run's days, and a sensor's run for a redelivered period has that
-- period's days), a line's share of a Capacity Block fee or a GCP commitment that lies in
-- another period ('shares changed'), a new GCP list price version ('list prices changed': a
-- SKU's first version prices every period). `reason` says which. Built before the six models
-- and their tests, which read it. A full build compares nothing.
{%- set range_start = run_range_start() %}
{%- set built = built_relation('int_billing_line_inputs') if execute else none %}
{%- set range_period = none if range_start is none else month_start_epoch(range_start - 86400) %}
with

now_inputs as (

    {{ billing_line_inputs() }}

),

{%- if range_start is not none and built is not none %}

built_inputs as (

    select * from {{ built }}

),

changed as (

    select * from {{ changed_input_rows('now_inputs', 'built_inputs') }}

),

first_changes as (

    -- each kind of change's first period (the range's when none changed)
    select
        coalesce(
            min(case when input = 'landed' then period_epoch end), {{ range_period }}
        ) as landed_from,
        coalesce(
            min(case when input in ('capacity_block', 'commitment') then period_epoch end),
            {{ range_period }}
        ) as shares_from,
        coalesce(
            min(case when input = 'list_price' then period_epoch end), {{ range_period }}
        ) as prices_from,
        max(case when input = 'list_price' and period_epoch is null then 1 else 0 end)
            as prices_reach_every_period
    from changed

),

final as (

    select
        cast(case
            when prices_reach_every_period = 1 then null
            else least({{ range_period }}, landed_from, shares_from, prices_from)
        end as bigint) as from_hour,
        case
            when prices_reach_every_period = 1 then 'list prices changed'
            when least(landed_from, shares_from, prices_from) >= {{ range_period }} then 'range'
            when landed_from <= least(shares_from, prices_from) then 'bill landed again'
            when shares_from <= prices_from then 'shares changed'
            else 'list prices changed'
        end as reason
    from first_changes

)

{%- else %}

final as (

    {{ no_comparison_choice(range_start) }}

)

{%- endif %}

select * from final
