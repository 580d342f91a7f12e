"""The query layer's run figures: the runs list (search, filter, sort) and one run's page (see
fleetledger/queries.py for the conventions). Sort columns come from the allow-list `RUN_SORTS`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import pandas as pd

from fleetledger.queries import Con, _query

#: sort key (as in the URL) -> the column the runs list is ordered by, highest first
RUN_SORTS: dict[str, str] = {
    "cost": "cost",
    "gpu_hours": "gpu_hours",
    "started_at": "started_at",
    "allocated_idle_cost": "allocated_idle_cost",
    "lost_work_cost": "lost_work_cost",
}


def runs_list(
    con: Con,
    start: date,
    end: date,
    search: str = "",
    teams: Sequence[str] = (),
    kinds: Sequence[str] = (),
    users: Sequence[str] = (),
    sort: str = "cost",
    limit: int = 500,
) -> pd.DataFrame:
    """Runs active in the range (fct_runs joined to fct_run_costs), highest `sort` first.

    `search` matches run_id, job_name or user_name (case-insensitive substring); team, kind and
    user filters keep the runs whose value is listed (no filter when empty). Columns: run_id,
    job_name, team, user_name, kind, state, failure_class, started_at, ended_at, gpus,
    gpu_hours, cost, allocated_idle_cost, lost_work_cost.
    """
    if sort not in RUN_SORTS:
        raise ValueError(f"unknown sort {sort!r}; one of {sorted(RUN_SORTS)}")
    return _query(
        con,
        f"""
        with listed as (
            select r.run_id, r.job_name, r.team, r.user_name, r.kind, r.state,
                   r.failure_class, r.started_at, r.ended_at, r.gpus,
                   cast(coalesce(c.gpu_hours, r.gpu_hours) as double) as gpu_hours,
                   cast(coalesce(c.cost, 0) as double) as cost,
                   cast(coalesce(c.allocated_idle_cost, 0) as double) as allocated_idle_cost,
                   cast(coalesce(c.lost_work_cost, 0) as double) as lost_work_cost
            from main.fct_runs r
            left join main.fct_run_costs c using (run_id)
            where r.started_at is not null
              and cast(r.started_at as date) <= ?
              and (r.ended_at is null or cast(r.ended_at as date) >= ?)
              and (? = '' or contains(lower(r.run_id), lower(?))
                   or contains(lower(coalesce(r.job_name, '')), lower(?))
                   or contains(lower(coalesce(r.user_name, '')), lower(?)))
              and (len(?) = 0 or list_contains(?, r.team))
              and (len(?) = 0 or list_contains(?, r.kind))
              and (len(?) = 0 or list_contains(?, r.user_name))
        )
        select * from listed
        order by {RUN_SORTS[sort]} desc nulls last, run_id
        limit ?
        """,
        (
            end,
            start,
            search,
            search,
            search,
            search,
            list(teams),
            list(teams),
            list(kinds),
            list(kinds),
            list(users),
            list(users),
            int(limit),
        ),
    )


def run_values(con: Con, column: str) -> list[str]:
    """The distinct teams, kinds or users of fct_runs, for the filter pickers."""
    columns = {"team": "team", "kind": "kind", "user": "user_name"}
    if column not in columns:
        raise ValueError(f"unknown run column {column!r}; one of {sorted(columns)}")
    df = _query(
        con,
        f"select distinct {columns[column]} as v from main.fct_runs where v is not null order by 1",
    )
    return [str(v) for v in df["v"]]


def run_detail(con: Con, run_id: str) -> pd.DataFrame:
    """One run (fct_runs) with its costs (fct_run_costs); no row when the run is unknown.

    Cost breakdown columns: busy_cost (cost - allocated_idle_cost), allocated_idle_cost,
    shared_idle_cost, energy_cost (part of cost), lost_work_cost.
    """
    return _query(
        con,
        """
        select r.run_id, r.scheduler, r.cluster, r.job_id, r.attempt, r.job_name, r.team,
               r.user_name, r.account, r.queue, r.kind, r.state, r.failure_class, r.exit_code,
               r.reason, r.submitted_at, r.started_at, r.ended_at, r.queue_wait_seconds,
               r.gpus, r.hosts,
               cast(c.gpu_hours as double) as gpu_hours,
               cast(c.busy_gpu_hours as double) as busy_gpu_hours,
               cast(c.allocated_idle_gpu_hours as double) as allocated_idle_gpu_hours,
               cast(c.cost as double) as cost,
               cast(c.cost - c.allocated_idle_cost as double) as busy_cost,
               cast(c.allocated_idle_cost as double) as allocated_idle_cost,
               cast(c.shared_idle_cost as double) as shared_idle_cost,
               cast(c.energy_kwh as double) as energy_kwh,
               cast(c.energy_cost as double) as energy_cost,
               cast(c.list_cost as double) as list_cost,
               cast(c.lost_work_cost as double) as lost_work_cost,
               cast(c.lost_work_seconds as double) as lost_work_seconds,
               c.last_checkpoint_at, c.checkpoints, c.mapping
        from main.fct_runs r
        left join main.fct_run_costs c using (run_id)
        where r.run_id = ?
        """,
        (run_id,),
    )


def run_gpus(con: Con, run_id: str) -> pd.DataFrame:
    """The run's GPUs (fct_run_gpu_hours): host, gpu_index, gpu_uuid, mig_instance,
    held_hours, busy_share (busy / held seconds), cost, first_hour, last_hour."""
    return _query(
        con,
        """
        select host, gpu_index, gpu_uuid, mig_instance,
               cast(sum(held_seconds) as double) / 3600 as held_hours,
               cast(sum(busy_seconds) as double) / nullif(sum(held_seconds), 0) as busy_share,
               cast(sum(cost) as double) as cost,
               min(hour) as first_hour, max(hour) as last_hour
        from main.fct_run_gpu_hours
        where run_id = ?
        group by 1, 2, 3, 4
        order by 1, 2, 4
        """,
        (run_id,),
    )


def run_utilization(con: Con, run_id: str) -> pd.DataFrame:
    """The run's utilisation per hour and GPU (fct_run_gpu_hours): hour, gpu (host/index),
    mean_utilization (0-1), busy_share, cost."""
    return _query(
        con,
        """
        select hour,
               host || '/' || coalesce(cast(gpu_index as varchar), gpu_uuid)
                   || case when mig_instance <> '' then ':' || mig_instance else '' end as gpu,
               cast(mean_utilization as double) as mean_utilization,
               cast(busy_seconds as double) / nullif(held_seconds, 0) as busy_share,
               cast(cost as double) as cost
        from main.fct_run_gpu_hours
        where run_id = ?
        order by 1, 2
        """,
        (run_id,),
    )
