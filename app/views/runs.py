"""Runs: search, filter and sort the runs active in the date range; a run's page with its GPUs,
utilisation over time, cost breakdown (busy, allocated-idle, shared idle, energy), failure class
and work lost (fct_runs, fct_run_costs, fct_run_gpu_hours).

URL state: `q` (search), `team`, `kind`, `user`, `sort` and `run` (the open run's id).
"""

from __future__ import annotations

import pandas as pd
import streamlit as st

from app import queries as q
from app import ui
from fleetledger.queries_runs import RUN_SORTS

ctx = ui.context()
cur = ctx.currency
st.title("Runs")

with ui.figure_guard("Runs"):
    cols = st.columns([3, 2, 2, 2, 2])
    search = cols[0].text_input(
        "Search", value=ui.url_param("q") or "", key="runs_q", help="run id, job name or user"
    )
    picked: dict[str, list[str]] = {}
    for col, name in zip(cols[1:4], ("team", "kind", "user"), strict=True):
        options = q.figure("run_values", name)
        picked[name] = col.multiselect(
            name,
            options,
            default=[v for v in ui.url_list(name) if v in options],
            key=f"runs_{name}",
        )
    sorts = list(RUN_SORTS)
    sort = cols[4].selectbox(
        "Sort by (highest first)",
        sorts,
        index=sorts.index(ui.url_choice("sort", sorts, "cost")),
        key="runs_sort",
    )
    listed = q.figure(
        "runs_list",
        ctx.start,
        ctx.end,
        search.strip(),
        tuple(picked["team"]),
        tuple(picked["kind"]),
        tuple(picked["user"]),
        sort,
    )
    st.caption(f"{len(listed):,} runs active from {ctx.start} to {ctx.end} (at most 500 shown).")
    st.dataframe(
        listed,
        hide_index=True,
        column_config={
            "cost": st.column_config.NumberColumn(f"cost ({cur})", format="%.2f"),
            "allocated_idle_cost": st.column_config.NumberColumn(
                f"allocated-idle cost ({cur})", format="%.2f"
            ),
            "lost_work_cost": st.column_config.NumberColumn(f"work lost ({cur})", format="%.2f"),
            "gpu_hours": st.column_config.NumberColumn("GPU-hours", format="%.1f"),
        },
        key="runs_table",
    )
    ui.source("fct_runs, fct_run_costs")

    url_run = ui.url_param("run")
    run_ids = [str(r) for r in listed["run_id"]]
    if url_run and url_run not in run_ids:
        run_ids = [url_run, *run_ids]
    run_id = st.selectbox(
        "Open a run",
        ["", *run_ids],
        index=(run_ids.index(url_run) + 1) if url_run else 0,
        format_func=lambda r: r or "(choose a run)",
        key="runs_open",
    )
    ui.set_url_params(
        q=search.strip() or None,
        team=picked["team"],
        kind=picked["kind"],
        user=picked["user"],
        sort=None if sort == "cost" else sort,
        run=run_id or None,
    )

    if run_id:
        detail = q.figure("run_detail", run_id)
        if detail.empty:
            st.warning(f"No run {run_id!r} in this snapshot.")
        else:
            run = detail.iloc[0]
            hosts = ", ".join(run["hosts"]) if run["hosts"] is not None else "–"
            ended = run["ended_at"] if pd.notna(run["ended_at"]) else "(running)"
            st.header(f"Run {run_id}")
            st.markdown(
                f"**{run['job_name'] or '(no job name)'}** — team **{run['team']}**, user "
                f"**{run['user_name'] or '–'}**, kind {run['kind']}, state {run['state']}, "
                f"{run['gpus']} GPUs on {hosts}; started {run['started_at']}, ended {ended}."
            )

            def _money(name: str) -> float | None:
                return None if pd.isna(run[name]) else float(run[name])

            tiles = st.columns(4)
            tiles[0].metric(
                "Run cost",
                ui.compact_money(_money("cost"), cur),
                help=ui.exact_help(_money("cost"), cur, "fct_run_costs.cost: its GPU-seconds."),
            )
            tiles[1].metric("GPU-hours", ui.hours(run["gpu_hours"]), help="fct_run_costs")
            tiles[2].metric(
                "Failure class",
                str(run["failure_class"]) if pd.notna(run["failure_class"]) else "none",
                help="fct_runs.failure_class: infra | user | none",
            )
            tiles[3].metric(
                "Work lost",
                ui.compact_money(_money("lost_work_cost"), cur),
                help=ui.exact_help(
                    _money("lost_work_cost"),
                    cur,
                    "fct_run_costs.lost_work_cost: cost since the last checkpoint of a failed "
                    f"run ({ui.hours((run['lost_work_seconds'] or 0) / 3600)} h).",
                ),
            )
            breakdown = pd.DataFrame(
                {
                    "part": ["busy", "allocated-idle", "shared idle", "energy (in cost)"],
                    "cost": [
                        _money("busy_cost"),
                        _money("allocated_idle_cost"),
                        _money("shared_idle_cost"),
                        _money("energy_cost"),
                    ],
                }
            )
            st.subheader("Cost breakdown")
            ui.stacked_bars(
                breakdown,
                x="part",
                y="cost",
                color="part",
                x_label="part of the run's cost",
                y_label=f"cost ({cur})",
                mart="fct_run_costs (busy = cost - allocated_idle_cost; energy is inside cost)",
            )
            st.dataframe(breakdown, hide_index=True, key="run_breakdown")
            with ui.figure_guard("The run's GPUs"):
                st.subheader("GPUs")
                st.dataframe(q.figure("run_gpus", run_id), hide_index=True, key="run_gpus")
                ui.source("fct_run_gpu_hours")
                util = q.figure("run_utilization", run_id)
                if not util.empty:
                    st.subheader("Utilisation over time")
                    ui.lines(
                        util,
                        x="hour",
                        y="mean_utilization",
                        color="gpu",
                        x_label="hour (UTC)",
                        y_label="mean GPU utilisation (0-1)",
                        mart="fct_run_gpu_hours",
                    )
