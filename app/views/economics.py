"""Inference economics: cost per 1M tokens per service and day beside its TTFT p95 and GPU
utilisation (fct_inference_daily), and the recommendations priced in the reporting currency,
the largest monthly savings first (fct_recommendations)."""

from __future__ import annotations

import streamlit as st

from app import queries as q
from app import ui

KINDS = ("release_idle", "right_size_mig", "consolidate_replicas", "commitment", "release_capacity")

ctx = ui.context()
cur = ctx.currency
st.title("Inference economics")

st.subheader("Cost per 1M tokens, TTFT p95 and GPU utilisation per service")
if ui.require_mart("fct_inference_daily", "inference metrics"):
    with ui.figure_guard("Inference unit costs"):
        daily = q.figure("inference_service_daily", ctx.start, ctx.end)
        if daily.empty:
            st.info(
                "No inference metrics in this range (a source of kind `inference_metrics` "
                "tied to Kubernetes pods)."
            )
        else:
            left, middle, right = st.columns(3)
            with left:
                ui.lines(
                    daily,
                    x="day",
                    y="cost_per_1m_tokens",
                    color="model_name",
                    x_label="day (UTC)",
                    y_label=f"cost per 1M tokens ({cur})",
                    mart="fct_inference_daily.cost / tokens",
                )
            with middle:
                ui.lines(
                    daily,
                    x="day",
                    y="ttft_p95_s",
                    color="model_name",
                    x_label="day (UTC)",
                    y_label="TTFT p95, worst hour (s)",
                    mart="fct_inference_daily.ttft_p95_s",
                )
            with right:
                ui.lines(
                    daily,
                    x="day",
                    y="mean_utilization",
                    color="model_name",
                    x_label="day (UTC)",
                    y_label="GPU utilisation (0-1)",
                    mart="fct_inference_daily.mean_utilization",
                )
            st.dataframe(
                daily,
                hide_index=True,
                column_config={
                    "cost": st.column_config.NumberColumn(f"cost ({cur})", format="%.2f"),
                    "cost_per_1m_tokens": st.column_config.NumberColumn(
                        f"per 1M tokens ({cur})", format="%.4f"
                    ),
                    "ttft_p95_s": st.column_config.NumberColumn("TTFT p95 (s)", format="%.3f"),
                    "mean_utilization": st.column_config.NumberColumn("utilisation", format="%.3f"),
                },
                key="economics_daily",
            )

st.subheader("Recommendations, largest savings first")
if ui.require_mart("fct_recommendations", "recommendations"):
    with ui.figure_guard("Recommendations"):
        picked = st.multiselect(
            "kind",
            KINDS,
            default=[k for k in ui.url_list("rec_kind") if k in KINDS],
            key="economics_kinds",
        )
        ui.set_url_params(rec_kind=list(picked))
        recs = q.figure("recommendations", list(picked))
        if recs.empty:
            st.info("No recommendation: nothing the rules flag as waste.")
        else:
            total = float(recs["monthly_savings"].sum())
            st.metric(
                "Monthly savings",
                ui.compact_money(total, cur),
                help=ui.exact_help(total, cur, "The sum of the recommendations shown."),
            )
            st.dataframe(
                recs,
                hide_index=True,
                column_config={
                    "monthly_savings": st.column_config.NumberColumn(
                        f"monthly savings ({cur})", format="%.2f"
                    ),
                    "p95_utilization": st.column_config.NumberColumn(
                        "p95 utilisation", format="%.3f"
                    ),
                    "p95_memory_gb": st.column_config.NumberColumn(
                        "p95 memory (GB)", format="%.2f"
                    ),
                },
                key="economics_recommendations",
            )
            ui.source("fct_recommendations (rules and thresholds: docs/metrics.md)")
