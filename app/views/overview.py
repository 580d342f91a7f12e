"""Overview: spend, GPU-hours, idle waste, the most expensive runs and PUE for the date range.

Every number comes from a mart through `app.queries`; this page only lays them out.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import queries as q
from app import ui

CAUSE_HELP = {
    "unallocated": "no run held the GPU",
    "allocated_idle": "a run held the GPU below the idle threshold",
    "down": "the GPU was failed, or unobserved while no run held it",
}

ctx = ui.context()
cur = ctx.currency

st.title("Overview")
st.caption(
    f"UTC days {ctx.start} to {ctx.end}. Costs in {cur}, the reporting currency. "
    f"Snapshot published {ctx.snapshot_time:%Y-%m-%d %H:%M} UTC."
)

# --------------------------------------------------------------------------- spend
st.subheader("Spend")
with ui.figure_guard("Effective spend"):
    spend = q.spend_by_provider(ctx.start, ctx.end)
    spend_cols = st.columns(max(1, min(len(spend) + 1, 6)))
    spend_cols[0].metric(
        "Effective spend — total",
        ui.money(float(spend["effective_cost"].sum()), cur),
        help="fct_billing.x_effective_cost_reporting summed over the lines whose "
        "ChargePeriodStart falls in the range.",
    )
    for i, row in enumerate(spend.itertuples(index=False), start=1):
        spend_cols[i % len(spend_cols)].metric(
            f"Effective spend — {row.provider}",
            ui.money(row.effective_cost, cur),
            help=f"fct_billing lines with ServiceProviderName = {row.provider!r}.",
        )

st.markdown("**Daily effective spend by provider**")
with ui.figure_guard("Daily spend"):
    daily = q.daily_spend(ctx.start, ctx.end)
    if daily.empty:
        st.info("No billing lines in this range.")
    else:
        st.bar_chart(
            daily,
            x="day",
            y="effective_cost",
            color="provider",
            x_label="day (UTC)",
            y_label=f"effective cost ({cur})",
        )

# --------------------------------------------------------------------------- GPU-hours
st.subheader("GPU-hours")
with ui.figure_guard("GPU-hours"):
    gh = q.gpu_hours_summary(ctx.start, ctx.end).iloc[0]
    gh_cols = st.columns(3)
    gh_cols[0].metric(
        "GPU-hours paid",
        ui.hours(gh["gpu_hours"]),
        help="Every GPU-hour in fct_gpu_hours for the range: (busy + allocated_idle + "
        "unallocated + down seconds) / 3600.",
    )
    gh_cols[1].metric(
        "Busy GPU-hours",
        ui.hours(gh["busy_gpu_hours"]),
        help="fct_gpu_hours.busy_seconds / 3600.",
    )
    gh_cols[2].metric(
        "Fleet utilisation",
        ui.percent(None if pd.isna(gh["utilization"]) else float(gh["utilization"])),
        help="Busy GPU-hours / all GPU-hours, from fct_gpu_hours.",
    )

# --------------------------------------------------------------------------- idle
st.subheader("Idle GPU-hours and their cost")
with ui.figure_guard("Idle GPU-hours"):
    idle = q.idle_by_cause(ctx.start, ctx.end)
    idle_cols = st.columns(len(idle))
    for col, row in zip(idle_cols, idle.itertuples(index=False), strict=True):
        cause = str(row.cause)
        col.metric(
            f"Idle GPU-hours — {cause}",
            ui.hours(row.gpu_hours),
            help=f"fct_idle_gpu_hours.gpu_hours where cause = '{cause}': "
            f"{CAUSE_HELP.get(cause, cause)}.",
        )
        col.metric(
            f"Idle cost — {cause}",
            ui.money(row.cost, cur),
            help=f"fct_idle_gpu_hours.cost where cause = '{cause}'.",
        )
    st.caption(
        "allocated_idle cost is already part of run cost; unallocated and down cost is the "
        "fleet's idle cost on top of run cost."
    )

st.markdown("**Idle cost by cause and day**")
with ui.figure_guard("Idle cost by day"):
    idle_daily = q.idle_cost_daily(ctx.start, ctx.end)
    if idle_daily.empty:
        st.info("No idle GPU-hours in this range.")
    else:
        st.bar_chart(
            idle_daily,
            x="day",
            y="cost",
            color="cause",
            x_label="day (UTC)",
            y_label=f"idle cost ({cur})",
        )

# --------------------------------------------------------------------------- runs
st.subheader("Top 10 runs by cost")
st.caption("Runs active in the range, with their whole cost (fct_run_costs joined to fct_runs).")
with ui.figure_guard("Top runs"):
    runs = q.top_runs(ctx.start, ctx.end, limit=10)
    if runs.empty:
        st.info("No run costs in this range.")
    else:
        money_fmt = f"%.2f {cur}"
        st.dataframe(
            runs,
            hide_index=True,
            column_config={
                "gpu_hours": st.column_config.NumberColumn("GPU-hours", format="%.1f"),
                "cost": st.column_config.NumberColumn("cost", format=money_fmt),
                "allocated_idle_cost": st.column_config.NumberColumn(
                    "allocated-idle cost", format=money_fmt
                ),
                "started_at": st.column_config.DatetimeColumn("started (UTC)"),
                "ended_at": st.column_config.DatetimeColumn("ended (UTC)"),
            },
        )

# --------------------------------------------------------------------------- PUE
st.subheader("PUE per site and day")
with ui.figure_guard("PUE"):
    pue = q.pue_daily(ctx.start, ctx.end)
    if pue.empty:
        st.info("No facility power data in this range.")
    else:
        st.dataframe(
            pue,
            hide_index=True,
            column_config={
                "day": st.column_config.DateColumn("day (UTC)"),
                "facility_kwh": st.column_config.NumberColumn("facility kWh", format="%.1f"),
                "it_kwh": st.column_config.NumberColumn("IT kWh", format="%.1f"),
                "pue": st.column_config.NumberColumn("PUE", format="%.3f"),
                "it_energy_estimated": st.column_config.CheckboxColumn("IT energy estimated"),
            },
        )
