"""Energy: PUE per site and day, GPU energy per site, energy and energy cost per team
(fct_pue_daily, fct_gpu_hours, fct_run_costs)."""

from __future__ import annotations

import streamlit as st

from app import queries as q
from app import ui

ctx = ui.context()
cur = ctx.currency
st.title("Energy")

st.subheader("PUE per site and day")
with ui.figure_guard("PUE"):
    pue = q.pue_daily(ctx.start, ctx.end)
    if pue.empty:
        st.info("No facility power data in this range.")
    else:
        ui.lines(
            pue,
            x="day",
            y="pue",
            color="site",
            x_label="day (UTC)",
            y_label="PUE (facility kWh / IT kWh)",
            mart="fct_pue_daily",
        )
        st.dataframe(pue, hide_index=True, key="energy_pue")

st.subheader("GPU energy per site and day")
with ui.figure_guard("GPU energy"):
    gpu = q.figure("energy_by_site_day", ctx.start, ctx.end)
    if not gpu.empty:
        ui.stacked_bars(
            gpu,
            x="day",
            y="gpu_kwh",
            color="site",
            x_label="day (UTC)",
            y_label="GPU energy (kWh)",
            mart="fct_gpu_hours.energy_wh",
        )

st.subheader("Energy and energy cost per team")
with ui.figure_guard("Energy per team"):
    teams = q.figure("energy_by_team", ctx.start, ctx.end)
    if teams.empty:
        st.info("No run energy in this range.")
    else:
        ui.stacked_bars(
            teams,
            x="team",
            y="energy_kwh",
            color="team",
            x_label="team",
            y_label="energy of its runs (kWh)",
            mart="fct_run_costs.energy_kwh",
        )
        st.dataframe(
            teams,
            hide_index=True,
            column_config={
                "energy_kwh": st.column_config.NumberColumn("energy (kWh)", format="%.1f"),
                "energy_cost": st.column_config.NumberColumn(f"energy cost ({cur})", format="%.2f"),
                "cost": st.column_config.NumberColumn(f"run cost ({cur})", format="%.2f"),
            },
            key="energy_teams",
        )
        ui.source("fct_run_costs, fct_runs (runs active in the range)")
