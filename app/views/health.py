"""Fleet health: downtime, XIDs by code, ECC errors and row remaps, throttling and stragglers
(fct_fleet_health_daily, fct_xid_events, fct_stragglers)."""

from __future__ import annotations

import streamlit as st

from app import queries as q
from app import ui

ctx = ui.context()
st.title("Fleet health")

with ui.figure_guard("Fleet health per node"):
    nodes = q.figure("health_by_node", ctx.start, ctx.end)
    tiles = st.columns(5)
    tiles[0].metric("Node downtime (h)", ui.hours(float(nodes["downtime_hours"].sum())))
    tiles[1].metric("XIDs", f"{int(nodes['xids'].sum()):,}")
    tiles[2].metric("Fatal XIDs", f"{int(nodes['fatal_xids'].sum()):,}")
    tiles[3].metric(
        "ECC errors",
        f"{int(nodes['ecc_sbe_errors'].sum() + nodes['ecc_dbe_errors'].sum()):,}",
        help="single- + double-bit",
    )
    tiles[4].metric(
        "Remapped rows",
        f"{int(nodes['correctable_remapped_rows'].sum()):,} / "
        f"{int(nodes['uncorrectable_remapped_rows'].sum()):,}",
        help="correctable / uncorrectable remapped rows",
    )
    st.caption("Source: `fct_fleet_health_daily`.")

st.subheader("Downtime per node and day")
with ui.figure_guard("Downtime"):
    down = q.figure("downtime_daily", ctx.start, ctx.end)
    if down.empty:
        st.info("No node downtime in this range.")
    else:
        ui.stacked_bars(
            down,
            x="day",
            y="downtime_hours",
            color="host",
            x_label="day (UTC)",
            y_label="node downtime (hours)",
            mart="fct_fleet_health_daily",
        )

st.subheader("XIDs by code")
with ui.figure_guard("XIDs"):
    xids = q.figure("xids_by_code", ctx.start, ctx.end)
    if xids.empty:
        st.info("No XID errors in this range.")
    else:
        st.dataframe(xids, hide_index=True, key="health_xids")
        ui.source("fct_xid_events (lower_bound: counted from the last-XID gauge)")

st.subheader("ECC, row remapping and throttling per node")
with ui.figure_guard("Per node"):
    st.dataframe(
        nodes,
        hide_index=True,
        column_config={
            c: st.column_config.NumberColumn(c.replace("_", " "), format="%.2f")
            for c in (
                "downtime_hours",
                "gpu_down_hours",
                "throttle_gpu_hours",
                "thermal_throttle_gpu_hours",
                "power_throttle_gpu_hours",
            )
        },
        key="health_nodes",
    )
    ui.source("fct_fleet_health_daily")

st.subheader("Stragglers")
with ui.figure_guard("Stragglers"):
    slow = q.figure("stragglers", ctx.start, ctx.end)
    if slow.empty:
        st.info("No stragglers in this range.")
    else:
        st.dataframe(slow, hide_index=True, key="health_stragglers")
        ui.source("fct_stragglers (a GPU trailing the other GPUs of its run)")
