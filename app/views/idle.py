"""Idle and waste: a node x hour heatmap of GPU states, idle cost by cause and team, and the
longest idle allocations with their owners (fct_gpu_hours, fct_idle_gpu_hours, fct_run_costs)."""

from __future__ import annotations

import streamlit as st

from app import queries as q
from app import ui
from fleetledger.queries_fleet import GPU_STATES

COLOURS = ("#2ca02c", "#ff7f0e", "#c7c7c7", "#d62728")  # busy, allocated-idle, unallocated, down

ctx = ui.context()
cur = ctx.currency
st.title("Idle and waste")

st.subheader("GPU states per node and hour")
with ui.figure_guard("GPU state heatmap"):
    import plotly.graph_objects as go

    states = q.figure("gpu_state_heatmap", ctx.start, ctx.end)
    if states.empty:
        st.info("No GPU-hours in this range.")
    else:
        grid = states.pivot(index="host", columns="hour", values="state_code")
        n = len(GPU_STATES)
        scale = []
        for i, colour in enumerate(COLOURS):
            scale += [(i / n, colour), ((i + 1) / n, colour)]
        fig = go.Figure(
            go.Heatmap(
                z=grid.to_numpy(),
                x=list(grid.columns),
                y=list(grid.index),
                zmin=-0.5,
                zmax=n - 0.5,
                colorscale=scale,
                colorbar={
                    "title": "state",
                    "tickvals": list(range(n)),
                    "ticktext": list(GPU_STATES),
                },
                hovertemplate="%{y} %{x}<br>state %{z}<extra></extra>",
            )
        )
        fig.update_layout(xaxis_title="hour (UTC)", yaxis_title="node", height=120 + 24 * len(grid))
        st.plotly_chart(fig, width="stretch")
        ui.source(
            "fct_gpu_hours (each cell: the state with the most GPU-seconds over the node's GPUs)"
        )

st.subheader("Idle cost by cause and team")
with ui.figure_guard("Idle cost by team"):
    by_team = q.figure("idle_cost_by_team", ctx.start, ctx.end)
    if by_team.empty:
        st.info("No idle GPU-hours in this range.")
    else:
        ui.stacked_bars(
            by_team,
            x="team",
            y="cost",
            color="cause",
            x_label="team ((unallocated): nobody held the GPU)",
            y_label=f"idle cost ({cur})",
            mart="fct_idle_gpu_hours",
        )
        st.dataframe(
            by_team,
            hide_index=True,
            column_config={
                "gpu_hours": st.column_config.NumberColumn("GPU-hours", format="%.1f"),
                "cost": st.column_config.NumberColumn(f"cost ({cur})", format="%.2f"),
            },
            key="idle_by_team",
        )

st.subheader("Longest idle allocations")
st.caption("Runs holding GPUs below the idle threshold the longest, with who owns them.")
with ui.figure_guard("Longest idle allocations"):
    longest = q.figure("longest_idle_allocations", ctx.start, ctx.end, 20)
    if longest.empty:
        st.info("No allocated-idle GPU-hours in this range.")
    else:
        top = longest.iloc[0]
        st.metric(
            f"Longest idle allocation — {top['run_id']}",
            ui.compact_money(float(top["allocated_idle_cost"]), cur),
            help=ui.exact_help(
                float(top["allocated_idle_cost"]),
                cur,
                f"{ui.hours(top['allocated_idle_gpu_hours'])} allocated-idle GPU-hours of "
                f"{top['team']} / {top['user_name'] or '–'} (fct_run_costs.allocated_idle_cost).",
            ),
        )
        st.dataframe(
            longest,
            hide_index=True,
            column_config={
                "allocated_idle_gpu_hours": st.column_config.NumberColumn(
                    "allocated-idle GPU-hours", format="%.1f"
                ),
                "allocated_idle_cost": st.column_config.NumberColumn(
                    f"allocated-idle cost ({cur})", format="%.2f"
                ),
                "gpu_hours": st.column_config.NumberColumn("GPU-hours", format="%.1f"),
                "idle_share": st.column_config.NumberColumn("idle share", format="percent"),
            },
            key="idle_longest",
        )
        ui.source("fct_run_costs, fct_runs")
