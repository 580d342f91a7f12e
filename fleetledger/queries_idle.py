"""The idle-waste figures of the analyst notebooks (notebooks/idle_investigation.ipynb): idle
GPU-hours and their cost by team, host and day, and the longest idle allocations with their
owners. Same rules as `fleetledger.queries`: marts only, filters as bound parameters, one pandas
DataFrame per function, over a connection from `queries.connect` (read-only, UTC).
"""

from __future__ import annotations

import pandas as pd

from fleetledger.queries import Con, _query


def idle_by_team(con: Con) -> pd.DataFrame:
    """Idle GPU-hours and cost per team and cause over the whole window.

    `team` is `(nobody)` for unallocated and down idle (no run held the GPU: team null in the
    mart). Columns: team, cause, gpu_hours, cost. Reads fct_idle_gpu_hours.team, cause,
    gpu_hours, cost.
    """
    return _query(
        con,
        """
        select coalesce(team, '(nobody)') as team, cause,
               cast(sum(gpu_hours) as double) as gpu_hours,
               cast(sum(cost) as double) as cost
        from main.fct_idle_gpu_hours
        group by 1, 2
        order by cost desc, team, cause
        """,
    )


def idle_by_host_day(con: Con) -> pd.DataFrame:
    """Idle GPU-hours and cost per host, UTC day and cause (the heatmap of where idle sits).

    Columns: host, day, cause, gpu_hours, cost. Reads fct_idle_gpu_hours.host, day, cause,
    gpu_hours, cost.
    """
    return _query(
        con,
        """
        select host, cast(day as date) as day, cause,
               cast(sum(gpu_hours) as double) as gpu_hours,
               cast(sum(cost) as double) as cost
        from main.fct_idle_gpu_hours
        group by 1, 2, 3
        order by 1, 2, 3
        """,
    )


def longest_idle_allocations(
    con: Con, min_idle_gpu_hours: float = 0.0, limit: int = 20
) -> pd.DataFrame:
    """Runs ranked by the GPU-hours they held idle (allocated but below the idle threshold).

    Only runs with more than `min_idle_gpu_hours` idle GPU-hours; the `limit` largest. `idle_share`
    is allocated-idle cost / direct cost (null when the run cost nothing). Columns: run_id, team,
    user_name, kind, state, started_at, ended_at, gpus, gpu_hours, allocated_idle_gpu_hours,
    cost, allocated_idle_cost, idle_share. Reads fct_run_costs.run_id, team, gpu_hours,
    allocated_idle_gpu_hours, cost, allocated_idle_cost and fct_runs.run_id, user_name, kind,
    state, started_at, ended_at, gpus.
    """
    return _query(
        con,
        """
        select c.run_id, c.team, r.user_name, r.kind, r.state, r.started_at, r.ended_at,
               r.gpus,
               cast(c.gpu_hours as double) as gpu_hours,
               cast(c.allocated_idle_gpu_hours as double) as allocated_idle_gpu_hours,
               cast(c.cost as double) as cost,
               cast(c.allocated_idle_cost as double) as allocated_idle_cost,
               cast(c.allocated_idle_cost as double) / nullif(c.cost, 0) as idle_share
        from main.fct_run_costs c
        left join main.fct_runs r on r.run_id = c.run_id
        where c.allocated_idle_gpu_hours > ?
        order by c.allocated_idle_gpu_hours desc, c.run_id
        limit ?
        """,
        (float(min_idle_gpu_hours), int(limit)),
    )
