-- On-prem nodes have no bill: their rate card makes one synthetic FOCUS line per node-hour,
-- capex / (amortisation months x 730 h) plus the node's IT energy in the hour (its own meter when
-- it has one, else DCGM GPU energy plus the configured host overhead) x power price x the
-- site-day PUE.
-- Stored by billing period (macros/billing_periods.sql): a run rewrites the periods from the one
-- int_billing_lines_recompute_from chose on (the first period: {{ ref('int_billing_lines_recompute_from') }}).
{{ incremental_published_by_day(
    day_column='billing_period_epoch', to_last_day='int_billing_lines_recompute_from'
) }}
with

rate_cards as (

    select * from {{ ref('stg_config__rate_cards') }}

),

inventory as (

    select * from {{ ref('stg_config__inventory') }}

),

hours as (

    select * from {{ ref('int_hours') }}
    where hour_epoch >= {{ first_recomputed_hour('int_billing_lines_recompute_from') }}

),

energy as (

    select * from {{ ref('int_gpu_hour_energy_by_node') }}

),

pue as (

    select * from {{ ref('int_pue_daily') }}

),

metered as (

    select * from {{ ref('int_node_metered_energy') }}

),

node_hours as (

    select
        rate_cards.*,
        inventory.resource_id,
        hours.hour_epoch,
        hours.day_epoch,
        coalesce(
            metered.it_kwh,
            (coalesce(energy.gpu_energy_wh, 0) + rate_cards.host_overhead_w) / 1000
        ) as it_kwh,
        metered.it_kwh is not null as it_energy_metered,
        coalesce(pue.pue, 1.0) as pue
    from rate_cards
    inner join inventory
        on inventory.host = rate_cards.host
    cross join hours
    left join energy
        on energy.host = rate_cards.host and energy.hour_epoch = hours.hour_epoch
    left join pue
        on pue.site = rate_cards.site and pue.day_epoch = hours.day_epoch
    left join metered
        on metered.host = rate_cards.host and metered.hour_epoch = hours.hour_epoch

),

costed as (

    select
        node_hours.*,
        capex / (amortisation_months * 730.0) as capex_cost,
        it_kwh * power_price_per_kwh * pue as energy_cost
    from node_hours

),

final as (

    select
        'rate_card:' || host || ':' || cast(cast(hour_epoch as bigint) as string) as x_line_key,
        'onprem' as x_provider,
        'rate_card' as x_source,
        'fleetledger.yml#rate_cards' as x_source_file,
        capex_cost + energy_cost as billed_cost,
        capex_cost + energy_cost as effective_cost,
        capex_cost + energy_cost as list_cost,
        capex_cost + energy_cost as contracted_cost,
        {{ from_epoch('hour_epoch') }} as charge_period_start,
        {{ from_epoch('hour_epoch + 3600') }} as charge_period_end,
        {{ dbt.date_trunc('month', from_epoch('hour_epoch')) }} as billing_period_start,
        {{ dbt.dateadd('month', 1, dbt.date_trunc('month', from_epoch('hour_epoch'))) }}
            as billing_period_end,
        'On-premises' as service_provider_name,
        'GPU node (rate card)' as service_name,
        'Compute' as service_category,
        'Usage' as charge_category,
        'RateCard' as x_line_item_type,
        coalesce(resource_id, host) as resource_id,
        'rate-card:' || site as sku_id,
        1.0 as pricing_quantity,
        'Hours' as pricing_unit,
        site as region_id,
        site as sub_account_id,
        cast(null as string) as tags,
        currency as billing_currency,
        it_kwh as x_energy_kwh,
        energy_cost as x_energy_cost,
        cast({{ to_epoch(dbt.date_trunc('month', from_epoch('hour_epoch'))) }} as bigint)
            as billing_period_epoch
    from costed

)

select * from final
