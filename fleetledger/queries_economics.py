"""The Economics page's figures (docs/explorer.md, "Economics"): cost per 1M tokens, TTFT p95
and GPU utilisation per inference service and day (fct_inference_daily), and the priced
recommendations (fct_recommendations). Same rules as `fleetledger.queries`: marts only, bound
parameters, one pandas DataFrame per function, over a connection from `queries.connect`.
"""

from __future__ import annotations

from datetime import date

import pandas as pd

from fleetledger.queries import Con, _query


def inference_service_daily(con: Con, start: date, end: date) -> pd.DataFrame:
    """Per inference service (model_name) and UTC day in [start, end], all its replicas
    together: requests, tokens, GPU-hours, direct cost, cost per 1M tokens (the day's cost x 1e6
    / its tokens), the worst replica's TTFT p95 and the GPU-hour weighted utilisation.

    Columns: day, model_name, replicas, requests, tokens, gpu_hours, cost, cost_per_1m_tokens,
    ttft_p95_s, mean_utilization. Reads fct_inference_daily.day, model_name, run_id, requests,
    prompt_tokens, generation_tokens, gpu_hours, cost, ttft_p95_s, mean_utilization.
    """
    return _query(
        con,
        """
        select cast(day as date) as day, model_name,
               count(distinct run_id) as replicas,
               cast(sum(requests) as double) as requests,
               cast(sum(prompt_tokens + generation_tokens) as double) as tokens,
               cast(sum(gpu_hours) as double) as gpu_hours,
               cast(sum(cost) as double) as cost,
               cast(sum(cost) * 1e6 / nullif(sum(prompt_tokens + generation_tokens), 0)
                    as double) as cost_per_1m_tokens,
               cast(max(ttft_p95_s) as double) as ttft_p95_s,
               cast(sum(gpu_hours * mean_utilization)
                    / nullif(sum(case when mean_utilization is not null then gpu_hours end), 0)
                    as double) as mean_utilization
        from main.fct_inference_daily
        where day between ? and ?
        group by 1, 2
        order by 1, 2
        """,
        (start, end),
    )


def recommendations(con: Con, kinds: list[str] | None = None) -> pd.DataFrame:
    """Every recommendation, the largest monthly savings first; only `kinds` when given.

    Columns: recommendation_id, kind, subject, team, owner, action, evidence, days_observed,
    p95_utilization, p95_memory_gb, monthly_savings, currency, confidence. Reads the same
    columns of fct_recommendations.
    """
    kinds = list(kinds or [])
    return _query(
        con,
        """
        select recommendation_id, kind, subject, team, owner, action, evidence, days_observed,
               p95_utilization, p95_memory_gb, cast(monthly_savings as double) as monthly_savings,
               currency, confidence
        from main.fct_recommendations
        where len(?::varchar[]) = 0 or list_contains(?::varchar[], kind)
        order by monthly_savings desc, kind, subject
        """,
        (kinds, kinds),
    )
