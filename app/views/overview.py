"""Overview: spend to date vs budget, the change vs the previous period of equal length,
GPU-hours and utilisation, idle waste by cause, active alerts, the most expensive runs and PUE.

Every number comes from a mart through `app.queries`; this page only lays them out. Money tiles
are compact ($352.7k) with the exact figure in the tile's help.
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import queries as q
from app import ui
from fleetledger.queries_spend import previous_period

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

# an alert message's link (`/?alert=<alert_id>`, alerts.app_url) opens here with that alert
linked_alert = ui.url_param("alert")
if linked_alert and q.has_mart("fct_alerts"):
    with ui.figure_guard("Linked alert"):
        linked = q.figure("alert_history", False)
        linked = linked[linked["alert_id"] == linked_alert]
        if linked.empty:
            st.warning(f"Alert `{linked_alert}` is not in this snapshot.")
        else:
            a = linked.iloc[0]
            state = "resolved" if pd.notna(a["resolved_at"]) else "active"
            st.info(
                f"**Alert ({state})** `{a['rule']}` — {a['subject']}: {a['message']} "
                "(fct_alerts; its deliveries are on the Budgets and alerts page)",
                icon=":material/notifications:",
            )

# --------------------------------------------------------------------------- spend
st.subheader("Spend")
p_start, p_end = previous_period(ctx.start, ctx.end)
vs = f"vs {p_start} to {p_end}"
compare = pd.DataFrame(columns=["metric", "current", "previous"]).set_index("metric")
with ui.figure_guard("Change vs the previous period"):
    compare = q.figure("period_comparison", ctx.start, ctx.end).set_index("metric")


def _prev(metric: str) -> float | None:
    value = compare.loc[metric, "previous"] if metric in compare.index else None
    return None if value is None or pd.isna(value) else float(value)


with ui.figure_guard("Effective spend"):
    spend = q.spend_by_provider(ctx.start, ctx.end)
    total = float(spend["effective_cost"].sum())
    spend_cols = st.columns(max(1, min(len(spend) + 1, 6)))
    spend_cols[0].metric(
        "Effective spend — total",
        ui.compact_money(total, cur),
        delta=ui.change(total, _prev("spend")),
        delta_color="inverse",
        help=ui.exact_help(
            total,
            cur,
            "fct_billing.x_effective_cost_reporting summed over the lines whose "
            f"ChargePeriodStart falls in the range; the change is {vs}.",
        ),
    )
    for i, row in enumerate(spend.itertuples(index=False), start=1):
        spend_cols[i % len(spend_cols)].metric(
            f"Effective spend — {row.provider}",
            ui.compact_money(row.effective_cost, cur),
            help=ui.exact_help(
                row.effective_cost,
                cur,
                f"fct_billing lines with ServiceProviderName = {row.provider!r}.",
            ),
        )

if q.has_mart("fct_budget_status"):
    with ui.figure_guard("Budgets"):
        budgets = q.figure("current_budgets")
        if not budgets.empty:
            st.markdown("**Spend to date vs budget** (current period of each budget)")
            b_cols = st.columns(min(len(budgets), 4))
            for i, b in enumerate(budgets.itertuples(index=False)):
                b_cur = str(b.currency or cur)
                b_cols[i % len(b_cols)].metric(
                    f"Budget — {b.budget}",
                    ui.compact_money(b.spend_to_date, b_cur),
                    delta=f"{ui.percent(b.used_share)} of {ui.compact_money(b.amount, b_cur)}",
                    delta_color="off",
                    help=ui.exact_help(
                        b.spend_to_date,
                        b_cur,
                        f"of {ui.money(b.amount, b_cur)}, period from {b.period_start}, "
                        f"data through {b.data_through} (fct_budget_status).",
                    ),
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
        ui.source("fct_billing")

# --------------------------------------------------------------------------- GPU-hours
st.subheader("GPU-hours")
with ui.figure_guard("GPU-hours"):
    gh = q.gpu_hours_summary(ctx.start, ctx.end).iloc[0]
    gh_cols = st.columns(3)
    gh_cols[0].metric(
        "GPU-hours paid",
        ui.hours(gh["gpu_hours"]),
        delta=ui.change(float(gh["gpu_hours"]), _prev("gpu_hours")),
        delta_color="off",
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
        delta=ui.change(
            None if pd.isna(gh["utilization"]) else float(gh["utilization"]),
            _prev("utilization"),
        ),
        help=f"Busy GPU-hours / all GPU-hours, from fct_gpu_hours; the change is {vs}.",
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
            ui.compact_money(row.cost, cur),
            help=ui.exact_help(row.cost, cur, f"fct_idle_gpu_hours.cost where cause = '{cause}'."),
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
        ui.source("fct_idle_gpu_hours")

# --------------------------------------------------------------------------- alerts
st.subheader("Active alerts")
if ui.require_mart("fct_alerts", "alerts"):
    with ui.figure_guard("Active alerts"):
        active = q.figure("alert_history", True)
        st.metric("Active alerts", f"{len(active):,}", help="fct_alerts rows with no resolved_at.")
        if not active.empty:
            st.dataframe(
                active[["rule", "subject", "team", "amount", "message", "first_raised_at"]],
                hide_index=True,
                column_config={
                    "amount": st.column_config.NumberColumn(f"at stake ({cur})", format="%.2f")
                },
            )
        ui.source("fct_alerts")

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
