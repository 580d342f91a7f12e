{#- The unit-economics ratios of fct_inference_hourly and fct_inference_daily (docs/metrics.md,
    "Inference unit economics"), written once: from the columns requests, prompt_tokens,
    generation_tokens, gpu_hours and cost of the relation the select reads. The input/output
    split prices a generated token at var inference_output_token_weight prompt tokens, so that
    prompt_tokens x cost_per_1m_prompt_tokens + generation_tokens x
    cost_per_1m_generation_tokens = cost x 1e6. A ratio over nothing is null. -#}
{% macro inference_unit_costs() -%}
        cost * 1000000.0 / nullif(prompt_tokens + generation_tokens, 0) as cost_per_1m_tokens,
        cost * 1000000.0 / nullif(
            prompt_tokens + {{ var('inference_output_token_weight') }} * generation_tokens, 0
        ) as cost_per_1m_prompt_tokens,
        {{ var('inference_output_token_weight') }} * cost * 1000000.0 / nullif(
            prompt_tokens + {{ var('inference_output_token_weight') }} * generation_tokens, 0
        ) as cost_per_1m_generation_tokens,
        cost * 1000.0 / nullif(requests, 0) as cost_per_1k_requests,
        (prompt_tokens + generation_tokens) / nullif(gpu_hours * 3600.0, 0)
            as tokens_per_gpu_second
{%- endmacro %}
