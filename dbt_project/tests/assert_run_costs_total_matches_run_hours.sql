-- fct_run_costs.cost is exactly the sum of its GPU-hour costs (no run lost or doubled).
with

marts as (select sum(cost) as total from {{ ref('fct_run_costs') }}),

hours as (select sum(cost) as total from {{ ref('int_run_gpu_hour_costs') }})

select marts.total, hours.total
from marts cross join hours
where abs(marts.total - hours.total) > 0.01
