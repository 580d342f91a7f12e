-- Each GPU unit's integer key (macros/adapters.sql, unit_key) with the unit's UUID and MIG
-- instance: how a model that reads a table keyed by unit (int_sample_pieces) gives its rows
-- their unit's text back, and how a reader of that table finds a unit. From the days each
-- series was sampled (int_gpu_series_cadence, a row per unit and day): a table of one row per
-- unit, rebuilt by every run (a view would read the day models' file, which the published
-- snapshot does not hold); its tests say that no two units share a key and that a unit has
-- one.
with

series_days as (

    select unit_key, gpu_uuid, mig_instance from {{ ref('int_gpu_series_cadence') }}

),

final as (

    select distinct unit_key, gpu_uuid, mig_instance from series_days

)

select * from final
