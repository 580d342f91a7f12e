"""Forecasts and capacity: a series' history with its forecast and the 80 % and 95 % intervals,
the back-test error, and the capacity runway (fct_forecast, fct_capacity).

URL state: `series`, `scope`.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import queries as q
from app import ui

UNITS = {"gpu_hours": "held GPU-hours", "spend": "spend", "peak_gpus": "peak GPUs"}

ctx = ui.context()
cur = ctx.currency
st.title("Forecasts and capacity")

if ui.require_mart("fct_forecast", "forecasts"):
    with ui.figure_guard("Forecast"):
        import plotly.graph_objects as go

        pairs = q.figure("forecast_scopes")
        if pairs.empty:
            st.info("No forecasts yet: run the pipeline (fct_forecast is empty).")
        else:
            all_series = sorted(pairs["series"].unique())
            cols = st.columns(2)
            series = cols[0].selectbox(
                "Series",
                all_series,
                index=all_series.index(ui.url_choice("series", all_series, all_series[0])),
                key="fc_series",
            )
            scopes = sorted(pairs.loc[pairs["series"] == series, "scope"])
            default_scope = "total" if "total" in scopes else scopes[0]
            scope = cols[1].selectbox(
                "Scope",
                scopes,
                index=scopes.index(ui.url_choice("scope", scopes, default_scope)),
                key="fc_scope",
            )
            ui.set_url_params(series=series, scope=scope)
            df = q.figure("forecast_series", series, scope)
            unit = f"{UNITS.get(series, series)}" + (f" ({cur})" if series == "spend" else "")
            fig = go.Figure()
            for lo, hi, name, alpha in (
                ("lo_95", "hi_95", "95 %", 0.15),
                ("lo_80", "hi_80", "80 %", 0.3),
            ):
                fig.add_trace(
                    go.Scatter(
                        x=df["day"],
                        y=df[hi],
                        mode="lines",
                        line={"width": 0},
                        showlegend=False,
                        hoverinfo="skip",
                    )
                )
                fig.add_trace(
                    go.Scatter(
                        x=df["day"],
                        y=df[lo],
                        mode="lines",
                        line={"width": 0},
                        fill="tonexty",
                        fillcolor=f"rgba(31,119,180,{alpha})",
                        name=f"{name} interval",
                    )
                )
            fig.add_trace(go.Scatter(x=df["day"], y=df["yhat"], mode="lines", name="forecast"))
            fig.add_trace(
                go.Scatter(x=df["day"], y=df["actual"], mode="lines+markers", name="actual")
            )
            fig.update_layout(xaxis_title="day (UTC)", yaxis_title=unit, height=400)
            st.plotly_chart(fig, width="stretch")
            ui.source("fct_forecast")
            # the model's figures: from the latest row that carries a back-test (history rows
            # may leave them null)
            scored = df[df["backtest_error"].notna()]
            first = (scored if not scored.empty else df).iloc[-1] if not df.empty else None
            if first is not None:
                tiles = st.columns(4)
                tiles[0].metric("Model", str(first["model"]))
                err = first["backtest_error"]
                tiles[1].metric(
                    "Back-test error",
                    "n/a" if pd.isna(err) else f"{float(err):.1%}",
                    help="fct_forecast.backtest_error",
                )
                cov = first["backtest_coverage_80"]
                tiles[2].metric(
                    "Back-test 80 % coverage", "n/a" if pd.isna(cov) else f"{float(cov):.0%}"
                )
                tiles[3].metric("Trained through", str(first["trained_through"]))
                if bool(first["insufficient_history"]):
                    st.warning("Insufficient history: this forecast is a naive one.")

st.subheader("Capacity runway")
if ui.require_mart("fct_capacity", "capacity forecast"):
    with ui.figure_guard("Capacity"):
        runway = q.figure("capacity_runway")
        st.dataframe(runway, hide_index=True, key="fc_runway")
        ui.source("fct_capacity (runway_day: first day the 80 % upper demand exceeds the fleet)")
        if not runway.empty:
            scope = "total" if "total" in set(runway["scope"]) else str(runway["scope"].iloc[0])
            ui.lines(
                q.figure("capacity_series", scope),
                x="day",
                y=["fleet_gpus", "peak_gpus_demand", "peak_gpus_hi_80"],
                x_label="day (UTC)",
                y_label=f"GPUs ({scope})",
                mart="fct_capacity",
            )
