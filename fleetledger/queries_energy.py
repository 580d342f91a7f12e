"""The energy figures of the analyst notebooks (notebooks/energy_and_pue.ipynb): GPU energy per
team, day and site, beside the PUE figures of `fleetledger.queries` (`pue_by_site`,
`pue_daily`). Same rules as `fleetledger.queries`: marts only, bound parameters, one pandas
DataFrame per function, over a connection from `queries.connect` (read-only, UTC).
"""

from __future__ import annotations

import pandas as pd

from fleetledger.queries import Con, _query


def energy_by_team(con: Con) -> pd.DataFrame:
    """GPU energy the runs of each team drew, and its cost, over the whole window.

    `energy_kwh` is the DCGM power of the GPU-seconds each run held (split like its seconds);
    `energy_cost` is known only on nodes priced by energy (on-prem rate cards): null when no run
    of the team ran on one. Columns: team, runs, energy_kwh, energy_cost, cost. Reads
    fct_run_costs.team, energy_kwh, energy_cost, cost.
    """
    return _query(
        con,
        """
        select coalesce(team, '(none)') as team, count(*) as runs,
               cast(coalesce(sum(energy_kwh), 0) as double) as energy_kwh,
               cast(sum(energy_cost) as double) as energy_cost,
               cast(coalesce(sum(cost), 0) as double) as cost
        from main.fct_run_costs
        group by 1
        order by energy_kwh desc, team
        """,
    )


def team_energy_daily(con: Con) -> pd.DataFrame:
    """GPU energy per team and UTC day. Columns: day, team, energy_kwh, energy_cost.

    Reads fct_team_gpu_hours_daily.day, team, energy_kwh, energy_cost.
    """
    return _query(
        con,
        """
        select cast(day as date) as day, coalesce(team, '(none)') as team,
               cast(sum(energy_kwh) as double) as energy_kwh,
               cast(sum(energy_cost) as double) as energy_cost
        from main.fct_team_gpu_hours_daily
        group by 1, 2
        order by 1, 2
        """,
    )


def gpu_energy_by_site(con: Con) -> pd.DataFrame:
    """All GPU energy per site and provider (held by a run or not), with the GPU-hours it spans.

    Columns: site, provider, gpu_hours, energy_kwh. Reads fct_gpu_hours.site, provider,
    busy_seconds, allocated_idle_seconds, unallocated_seconds, down_seconds, energy_wh.
    """
    return _query(
        con,
        """
        select coalesce(site, '(none)') as site, coalesce(provider, '(none)') as provider,
               cast(sum(busy_seconds + allocated_idle_seconds + unallocated_seconds
                        + down_seconds) as double) / 3600 as gpu_hours,
               cast(coalesce(sum(energy_wh), 0) as double) / 1000 as energy_kwh
        from main.fct_gpu_hours
        group by 1, 2
        order by 1, 2
        """,
    )
