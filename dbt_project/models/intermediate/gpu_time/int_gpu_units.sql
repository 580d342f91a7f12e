-- The units a physical GPU's seconds are shared by, in each accounted hour. A GPU without MIG is
-- one unit (`mig_instance` = '', fraction 1). A MIG GPU has one unit per instance, weighted by
-- its compute slices / 7 (the `<n>g` of the profile, H100/A100), and a remainder unit '' for the
-- slices no instance uses; the remainder can be unallocated or down, never held.
-- The layout is per GPU and hour, since MIG can be reconfigured: an hour takes the instances the
-- GPU reported in that hour; an hour in which the GPU reported nothing keeps the layout of the
-- last hour it reported in (before its first report: that of its first). A GPU that never
-- reported, or only without instances, is one whole unit throughout. A GPU has units only in the
-- hours it held its slot (int_gpus' tenure: a replaced board until its successor's first report).
-- Stored by day (macros/incremental.sql): since an hour without a report keeps the layout of the
-- GPU's last report however many days before, a run recomputes every day from the first of its
-- range on, carrying in each GPU's last report before it; it recomputes every day when the GPUs
-- changed since the last build (int_gpu_units_recompute_from: a new or replaced board, a first
-- report reach back before the range).
-- (the first hour: {{ ref('int_gpu_units_recompute_from') }})
{{ incremental_by_day(to_last_day='int_gpu_units_recompute_from') }}
{%- set from_hour = first_recomputed_hour('int_gpu_units_recompute_from') %}
with

gpus as (

    select gpu_uuid, tenure_from, tenure_to from {{ ref('int_gpus') }}

),

hours as (

    select hour_epoch from {{ ref('int_hours') }}
    where hour_epoch >= {{ from_hour }}

),

gpu_hours as (

    -- each GPU's accounted hours in its slot
    select gpus.gpu_uuid, hours.hour_epoch
    from gpus
    cross join hours
    where (gpus.tenure_from is null or hours.hour_epoch >= gpus.tenure_from)
        and (gpus.tenure_to is null or hours.hour_epoch < gpus.tenure_to)

),

all_reports as (

    select gpu_uuid, hour_epoch, mig_instance, mig_profile
    from {{ ref('int_gpu_hour_reports') }}

),

carried_hours as (

    -- each GPU's last reported hour before the recomputed hours: the layout they start with
    -- (none on a full build)
    select gpu_uuid, max(hour_epoch) as hour_epoch
    from all_reports
    where hour_epoch < {{ from_hour }}
    group by gpu_uuid

),

reports as (

    -- the instances each GPU reported in each hour ('' alone: the whole GPU)
    select
        all_reports.gpu_uuid,
        all_reports.hour_epoch as layout_hour,
        all_reports.mig_instance,
        max(all_reports.mig_profile) as mig_profile
    from all_reports
    left join carried_hours
        on carried_hours.gpu_uuid = all_reports.gpu_uuid
        and carried_hours.hour_epoch = all_reports.hour_epoch
    where all_reports.hour_epoch >= {{ from_hour }} or carried_hours.gpu_uuid is not null
    group by all_reports.gpu_uuid, all_reports.hour_epoch, all_reports.mig_instance

),

reported_hours as (

    select distinct gpu_uuid, layout_hour from reports

),

timeline as (

    -- each accounted hour of a GPU beside the hours it reported in
    select gpu_uuid, hour_epoch, cast(null as double) as layout_hour
    from gpu_hours
    union all
    select gpu_uuid, layout_hour as hour_epoch, layout_hour
    from reported_hours

),

carried as (

    select
        gpu_uuid,
        hour_epoch,
        layout_hour,
        count(layout_hour) over (
            -- a reported hour's own row counts before its spine row
            partition by gpu_uuid
            order by hour_epoch, case when layout_hour is null then 1 else 0 end
            rows between unbounded preceding and current row
        ) as layout_group,
        min(layout_hour) over (partition by gpu_uuid) as first_layout_hour
    from timeline

),

groups as (

    select
        gpu_uuid,
        layout_group,
        max(layout_hour) as group_layout_hour
    from carried
    group by gpu_uuid, layout_group

),

hour_layouts as (

    select distinct
        carried.gpu_uuid,
        gpu_hours.hour_epoch,
        case
            when carried.layout_group = 0 then carried.first_layout_hour
            else groups.group_layout_hour
        end as layout_hour
    from carried
    inner join groups
        on groups.gpu_uuid = carried.gpu_uuid and groups.layout_group = carried.layout_group
    inner join gpu_hours
        on gpu_hours.gpu_uuid = carried.gpu_uuid and gpu_hours.hour_epoch = carried.hour_epoch

),

instances as (

    select
        hour_layouts.gpu_uuid,
        reports.mig_instance,
        hour_layouts.hour_epoch,
        reports.mig_profile,
        cast({{ regex_extract('reports.mig_profile', "'^([0-9]+)g'") }} as double) / 7
            as unit_fraction
    from hour_layouts
    inner join reports
        on reports.gpu_uuid = hour_layouts.gpu_uuid
        and reports.layout_hour = hour_layouts.layout_hour
    where reports.mig_instance <> ''

),

used as (

    select gpu_uuid, hour_epoch, sum(unit_fraction) as used_fraction
    from instances
    group by gpu_uuid, hour_epoch

),

whole as (

    select
        gpu_hours.gpu_uuid,
        '' as mig_instance,
        gpu_hours.hour_epoch,
        cast(null as string) as mig_profile,
        1.0 - coalesce(used.used_fraction, 0) as unit_fraction
    from gpu_hours
    left join used
        on used.gpu_uuid = gpu_hours.gpu_uuid and used.hour_epoch = gpu_hours.hour_epoch

),

units as (

    select * from instances
    union all
    select * from whole where unit_fraction > 0.000001

),

final as (

    select units.*, floor(units.hour_epoch / 86400) * 86400 as day_epoch
    from units

)

select * from final
