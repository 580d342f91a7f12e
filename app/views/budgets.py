"""Budgets and alerts: status per budget, alert history with delivery results
(fct_budget_status, fct_alerts, fct_alert_deliveries). URL state: `budget`."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import queries as q
from app import ui

ctx = ui.context()
st.title("Budgets and alerts")


def _status(row: pd.Series) -> str:
    crossed = list(
        row["thresholds_crossed_actual"] if row["thresholds_crossed_actual"] is not None else []
    )
    forecast = list(
        row["thresholds_crossed_forecast"] if row["thresholds_crossed_forecast"] is not None else []
    )
    used = row["used_share"]
    if pd.notna(used) and float(used) >= 1.0:
        return "over budget"
    if forecast and max(forecast) >= 1.0:
        return "forecast over budget"
    if crossed:
        return f"{max(crossed):.0%} threshold crossed"
    return "on track"


st.subheader("Status per budget")
if ui.require_mart("fct_budget_status", "budget status"):
    with ui.figure_guard("Budgets"):
        current = q.figure("current_budgets")
        if current.empty:
            st.info("No budgets configured (`budgets:` in fleetledger.yml).")
        else:
            current = current.assign(status=current.apply(_status, axis=1))
            for row in current.itertuples(index=False):
                b_cur = str(row.currency or ctx.currency)
                st.metric(
                    f"{row.budget} — {row.status}",
                    f"{ui.compact_money(row.spend_to_date, b_cur)} of "
                    f"{ui.compact_money(row.amount, b_cur)}",
                    delta=f"{ui.percent(row.used_share)} used",
                    delta_color="off",
                    help=ui.exact_help(
                        row.spend_to_date,
                        b_cur,
                        f"Spend to date of {ui.money(row.amount, b_cur)}; period from "
                        f"{row.period_start}, data through {row.data_through}; period-end "
                        f"forecast {ui.money(row.forecast_period_end, b_cur)} (80 %: "
                        f"{ui.money(row.forecast_lo_80, b_cur)} to "
                        f"{ui.money(row.forecast_hi_80, b_cur)}).",
                    ),
                )
            st.dataframe(current, hide_index=True, key="budgets_current")
            ui.source("fct_budget_status")
            names = sorted(current["budget"])
            picked = st.selectbox(
                "Periods of budget",
                names,
                index=names.index(ui.url_choice("budget", names, names[0])),
                key="budgets_pick",
            )
            ui.set_url_params(budget=picked)
            periods = q.figure("budget_status")
            st.dataframe(
                periods[periods["budget"] == picked], hide_index=True, key="budgets_periods"
            )

st.subheader("Alert history")
if ui.require_mart("fct_alerts", "alerts"):
    with ui.figure_guard("Alerts"):
        history = q.figure("alert_history", False)
        if history.empty:
            st.info("No alerts raised.")
        else:
            st.dataframe(history, hide_index=True, key="alerts_history")
            ui.source("fct_alerts, fct_alert_deliveries (sent: channels delivered to)")
    if ui.require_mart("fct_alert_deliveries", "alert deliveries"):
        with ui.figure_guard("Deliveries"):
            st.markdown("**Delivery attempts**")
            st.dataframe(q.figure("alert_deliveries"), hide_index=True, key="alerts_deliveries")
            ui.source("fct_alert_deliveries")
