"""Cost explorer: spend grouped by any dimension (team, provider, service, instance type, site,
run kind, user), idle cost shown separately or shared to the teams, filters, a stacked chart
over time, the table and a CSV download of exactly that table (fct_spend_breakdown).

The view's state lives in the URL: `group`, `idle` and one repeatable parameter per filter
(docs/explorer.md).
"""

from __future__ import annotations

import streamlit as st

from app import queries as q
from app import ui
from fleetledger.queries_spend import BREAKDOWN_DIMENSIONS, IDLE_GROUP, IDLE_MODES

LABELS = {
    "team": "team",
    "provider": "provider",
    "service": "service",
    "instance_type": "instance type",
    "site": "site",
    "kind": "run kind",
    "user": "user",
}
DIMENSIONS = list(BREAKDOWN_DIMENSIONS)

ctx = ui.context()
cur = ctx.currency
st.title("Cost explorer")
st.caption(
    f"Spend from {ctx.start} to {ctx.end} (UTC days) in {cur}, every bill line prorated to its "
    "days and GPU-node cost split to the runs that held the GPUs."
)

if ui.require_mart("fct_spend_breakdown", "spend breakdown"):
    controls = st.columns([2, 2, 3])
    group_by = controls[0].selectbox(
        "Group by",
        DIMENSIONS,
        index=DIMENSIONS.index(ui.url_choice("group", DIMENSIONS, "team")),
        format_func=LABELS.__getitem__,
        key="costs_group",
    )
    idle = controls[1].radio(
        "Idle cost",
        list(IDLE_MODES),
        index=list(IDLE_MODES).index(ui.url_choice("idle", IDLE_MODES, "separate")),
        format_func={
            "separate": "separate",
            "shared": "shared to teams",
        }.__getitem__,
        horizontal=True,
        key="costs_idle",
        help="separate: the GPU nodes' unallocated and down cost is its own group "
        f"{IDLE_GROUP!r}. shared: it is shared to the teams in proportion to their direct "
        "cost (fct_spend_breakdown.shared_idle_cost).",
    )
    filters: dict[str, list[str]] = {}
    with st.expander("Filters", expanded=any(ui.url_list(d) for d in DIMENSIONS)):
        cols = st.columns(4)
        for i, dimension in enumerate(DIMENSIONS):
            with ui.figure_guard(f"{dimension} values"):
                options = q.figure("breakdown_values", dimension, ctx.start, ctx.end)
                picked = cols[i % 4].multiselect(
                    LABELS[dimension],
                    options,
                    default=[v for v in ui.url_list(dimension) if v in options],
                    key=f"costs_filter_{dimension}",
                )
                if picked:
                    filters[dimension] = picked
    ui.set_url_params(
        group=None if group_by == "team" else group_by,
        idle=None if idle == "separate" else idle,
        **{d: filters.get(d, []) for d in DIMENSIONS},
    )

    with ui.figure_guard("Spend breakdown"):
        table = q.figure("spend_breakdown", ctx.start, ctx.end, group_by, idle, filters)
        daily = q.figure("spend_breakdown_daily", ctx.start, ctx.end, group_by, idle, filters)
        total = float(table["spend"].sum()) if not table.empty else 0.0
        st.metric(
            "Spend shown",
            ui.compact_money(total, cur),
            help=ui.exact_help(total, cur, "The table's spend summed (fct_spend_breakdown)."),
        )
        if table.empty:
            st.info("No spend for this selection.")
        else:
            st.subheader(f"Spend per day by {LABELS[group_by]}")
            ui.stacked_bars(
                daily,
                x="day",
                y="spend",
                color=group_by,
                x_label="day (UTC)",
                y_label=f"spend ({cur})",
                mart="fct_spend_breakdown",
            )
            st.subheader(f"Spend by {LABELS[group_by]}")
            st.caption(
                f"Amounts in {cur}; share is of the table's spend. The CSV below is exactly this "
                "table (same columns and rows)."
            )
            money = st.column_config.NumberColumn(format="%.2f")
            st.dataframe(
                table,
                hide_index=True,
                column_config={
                    "spend": money,
                    "gpu_node_cost": money,
                    "other_cost": money,
                    "shared_idle_cost": money,
                    "share": st.column_config.NumberColumn(format="%.4f"),
                },
                key="costs_table",
            )
            ui.source("fct_spend_breakdown")
            st.download_button(
                "Download CSV",
                data=table.to_csv(index=False),
                file_name=f"fleetledger_spend_by_{group_by}_{ctx.start}_{ctx.end}.csv",
                mime="text/csv",
                help="Exactly the rows and columns of the table above.",
                key="costs_csv",
            )
