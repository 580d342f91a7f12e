-- The units a physical GPU's seconds are shared by. A GPU without MIG is one unit
-- (`mig_instance` = '', fraction 1). A MIG GPU has one unit per instance, weighted by its
-- compute slices / 7 (the `<n>g` of the profile, H100/A100), and a remainder unit '' for the
-- slices no instance uses; the remainder can be unallocated or down, never held.
with

seen as (

    select
        gpu_uuid,
        mig_instance,
        max(mig_profile) as mig_profile
    from {{ ref('int_gpu_samples') }}
    group by gpu_uuid, mig_instance

),

instances as (

    select
        gpu_uuid,
        mig_instance,
        mig_profile,
        cast({{ regex_extract('mig_profile', "'^([0-9]+)g'") }} as double) / 7.0 as unit_fraction
    from seen
    where mig_instance <> ''

),

mig_gpus as (

    select gpu_uuid, sum(unit_fraction) as used_fraction
    from instances
    group by gpu_uuid

),

whole as (

    select
        gpus.gpu_uuid,
        '' as mig_instance,
        cast(null as varchar) as mig_profile,
        1.0 - coalesce(mig_gpus.used_fraction, 0) as unit_fraction
    from {{ ref('int_gpus') }} as gpus
    left join mig_gpus
        on mig_gpus.gpu_uuid = gpus.gpu_uuid

),

final as (

    select * from instances
    union all
    select * from whole where unit_fraction > 0.000001

)

select * from final
