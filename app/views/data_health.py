"""Data health: freshness per source, the checks' findings, quarantined rows by reason
(fct_data_health, fct_quarantine)."""

from __future__ import annotations

import streamlit as st

from app import queries as q
from app import ui

SEVERITIES = ["error", "data_loss", "warning", "info"]

ctx = ui.context()
st.title("Data health")

st.subheader("Freshness per source")
with ui.figure_guard("Freshness"):
    fresh = q.figure("source_freshness")
    if fresh.empty:
        st.info("No findings recorded yet.")
    else:
        st.dataframe(fresh, hide_index=True, key="dh_fresh")
        ui.source("fct_data_health (last run and the latest day a finding names, per source)")

st.subheader("Checks")
with ui.figure_guard("Checks"):
    picked = st.multiselect("Severity", SEVERITIES, default=[], key="dh_severity")
    checks = q.figure("data_health_checks", tuple(picked))
    counts = checks.groupby("severity").size() if not checks.empty else None
    tiles = st.columns(len(SEVERITIES))
    for tile, sev in zip(tiles, SEVERITIES, strict=True):
        tile.metric(
            f"Findings — {sev}", f"{int(counts.get(sev, 0)) if counts is not None else 0:,}"
        )
    st.dataframe(checks, hide_index=True, key="dh_checks")
    ui.source("fct_data_health")

st.subheader("Quarantine")
with ui.figure_guard("Quarantine"):
    quarantined = q.figure("quarantine_counts")
    st.metric(
        "Quarantined rows", f"{int(quarantined['rows'].sum()) if not quarantined.empty else 0:,}"
    )
    if quarantined.empty:
        st.success("No rows quarantined.")
    else:
        st.dataframe(quarantined, hide_index=True, key="dh_quarantine")
    ui.source("fct_quarantine (rows a reader could not land, by reason)")
