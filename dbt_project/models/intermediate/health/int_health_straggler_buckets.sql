-- Each GPU a run holds (exact mappings only: an estimated mapping does not know which GPUs the
-- run has), per time bucket of var straggler_bucket_seconds: its utilisation and SM clock
-- beside the median of the OTHER GPUs of the same run in the same bucket, and whether it trails
-- that median by more than var straggler_margin. Only buckets where the other GPUs are busy
-- (their median utilisation >= the site's idle threshold) can trail.
--
-- The median of the others comes from order statistics, not a self-join, so a run of n GPUs
-- costs O(n log n) per bucket: with the bucket's values sorted v_1 <= ... <= v_n and the GPU's
-- own value v, the others' median is v_k or v_(k+1) (n even, k = n/2) or the mean of two of
-- v_k, v_(k+1), v_(k+2) (n odd, k = (n-1)/2): leaving v out shifts the middle down past each
-- of them that v is above (v above v_k: the others' middle starts at v_k, else at v_(k+1)).
-- Where v ties v_k, leaving out either copy leaves the same values. The sorted values are one
-- list per run and bucket (a group-by), not a rank per GPU (a window sort of every row).
--
-- Stored by bucket day (macros/incremental.sql): straggler_bucket_seconds divides a day, so a
-- bucket never spans midnight and a day's buckets depend only on that day's samples; a run
-- rewrites the days int_health_gpu_samples rewrites (its range and the day before it).
{%- if 86400 % var('straggler_bucket_seconds') != 0 %}
{{ exceptions.raise_compiler_error(
    'straggler_bucket_seconds must divide a day (86400 s) so that no bucket spans midnight; got '
    ~ var('straggler_bucket_seconds')
) }}
{%- endif %}
{{ incremental_by_day(days_before=1, day_batches=true) }}
with

holdings as (

    select distinct
        run_id,
        gpu_uuid,
        held_from,
        held_to
    from {{ ref('int_run_gpu_holdings') }}
    where mapping = 'exact'
        -- only the holdings that reach the rewritten days' samples: a GPU's holdings over the
        -- whole history would each be compared with every one of its samples
        and held_to > {{ first_recomputed_epoch(days_before=1) }}
        and held_from < {{ after_recomputed_epoch() }}

),

samples as (

    select * from {{ ref('int_health_gpu_samples') }}
    where utilization is not null and {{ in_recomputed_days('day_epoch', days_before=1) }}

),

gpus as (

    select * from {{ ref('int_gpus') }}

),

settings as (

    select * from {{ ref('stg_config__settings') }}

),

held_samples as (

    select
        holdings.run_id,
        samples.gpu_uuid,
        samples.host,
        samples.gpu_index,
        floor(samples.t / {{ var('straggler_bucket_seconds') }})
            * {{ var('straggler_bucket_seconds') }} as bucket_epoch,
        samples.t,
        least(samples.valid_to, holdings.held_to) as valid_to,
        samples.utilization,
        samples.sm_clock_mhz
    from samples
    inner join holdings
        on holdings.gpu_uuid = samples.gpu_uuid
        and samples.t >= holdings.held_from
        and samples.t < holdings.held_to

),

per_bucket as (

    select
        run_id,
        gpu_uuid,
        host,
        gpu_index,
        bucket_epoch,
        min(t) as t_from,
        max(valid_to) as t_to,
        avg(utilization) as utilization,
        avg(sm_clock_mhz) as sm_clock_mhz
    from held_samples
    group by run_id, gpu_uuid, host, gpu_index, bucket_epoch

),

bucket_values as (

    select
        run_id,
        bucket_epoch,
        count(*) as n_util,
        count(sm_clock_mhz) as n_clock,
        {{ sorted_values('utilization') }} as utilizations,
        {{ sorted_values('sm_clock_mhz') }} as sm_clocks
    from per_bucket
    group by run_id, bucket_epoch

),

order_stats as (

    select
        run_id,
        bucket_epoch,
        n_util,
        n_clock,
        {{ list_at('utilizations', 'floor(n_util / 2)') }} as u_k0,
        {{ list_at('utilizations', 'floor(n_util / 2) + 1') }} as u_k1,
        {{ list_at('utilizations', 'floor(n_util / 2) + 2') }} as u_k2,
        {{ list_at('sm_clocks', 'floor(n_clock / 2)') }} as c_k0,
        {{ list_at('sm_clocks', 'floor(n_clock / 2) + 1') }} as c_k1,
        {{ list_at('sm_clocks', 'floor(n_clock / 2) + 2') }} as c_k2
    from bucket_values

),

medians as (

    select
        per_bucket.*,
        order_stats.n_util,
        case
            when order_stats.n_util < 2 then null
            when order_stats.n_util = 2 * floor(order_stats.n_util / 2) then
                case when per_bucket.utilization > order_stats.u_k0 then order_stats.u_k0 else order_stats.u_k1 end
            else (
                case when per_bucket.utilization > order_stats.u_k0 then order_stats.u_k0 else order_stats.u_k1 end
                + case when per_bucket.utilization > order_stats.u_k1 then order_stats.u_k1 else order_stats.u_k2 end
            ) / 2
        end as median_other_utilization,
        case
            when per_bucket.sm_clock_mhz is null or order_stats.n_clock < 2 then null
            when order_stats.n_clock = 2 * floor(order_stats.n_clock / 2) then
                case when per_bucket.sm_clock_mhz > order_stats.c_k0 then order_stats.c_k0 else order_stats.c_k1 end
            else (
                case when per_bucket.sm_clock_mhz > order_stats.c_k0 then order_stats.c_k0 else order_stats.c_k1 end
                + case when per_bucket.sm_clock_mhz > order_stats.c_k1 then order_stats.c_k1 else order_stats.c_k2 end
            ) / 2
        end as median_other_sm_clock_mhz
    from per_bucket
    inner join order_stats
        on order_stats.run_id = per_bucket.run_id
        and order_stats.bucket_epoch = per_bucket.bucket_epoch

),

final as (

    select
        medians.run_id,
        medians.gpu_uuid,
        medians.host,
        medians.gpu_index,
        medians.bucket_epoch,
        floor(medians.bucket_epoch / 86400) * 86400 as day_epoch,
        medians.t_from,
        medians.t_to,
        medians.n_util as gpus_compared,
        medians.utilization,
        medians.median_other_utilization,
        medians.sm_clock_mhz,
        medians.median_other_sm_clock_mhz,
        coalesce(
            medians.median_other_utilization >= settings.idle_threshold
            and medians.utilization
            < (1 - {{ var('straggler_margin') }}) * medians.median_other_utilization,
            false
        ) as utilization_trails,
        coalesce(
            medians.median_other_utilization >= settings.idle_threshold
            and medians.sm_clock_mhz
            < (1 - {{ var('straggler_margin') }}) * medians.median_other_sm_clock_mhz,
            false
        ) as sm_clock_trails
    from medians
    left join gpus
        on gpus.gpu_uuid = medians.gpu_uuid
    left join settings
        on settings.site = gpus.site

)

select * from final
