"""The forecast figures of the analyst notebooks (notebooks/forecast_review.ipynb), over the
marts `fct_forecast` (series, scope, day) and `fct_capacity` (scope, day) of DESIGN's
"Forecasts, budgets and alerts" contract. A snapshot built before those marts existed has
neither: check `queries.available_marts` first (`FORECAST_MARTS`). Same rules as
`fleetledger.queries`: marts only, bound parameters, one pandas DataFrame per function.
"""

from __future__ import annotations

import pandas as pd

from fleetledger.queries import Con, _query

FORECAST_MARTS: tuple[str, ...] = ("fct_forecast", "fct_capacity")


def forecast_models(con: Con) -> pd.DataFrame:
    """One row per forecast series and scope: the model, how it back-tested, how far it reaches.

    `horizon_days` counts the days after `trained_through`. Columns: series, scope, model,
    trained_through, insufficient_history, backtest_error, backtest_coverage_80,
    backtest_coverage_95, first_day, last_day, horizon_days. Reads fct_forecast.series, scope,
    day, model, trained_through, insufficient_history, backtest_error, backtest_coverage_80,
    backtest_coverage_95.
    """
    return _query(
        con,
        """
        select series, scope,
               max(model) as model,
               max(cast(trained_through as date)) as trained_through,
               bool_or(insufficient_history) as insufficient_history,
               cast(max(backtest_error) as double) as backtest_error,
               cast(max(backtest_coverage_80) as double) as backtest_coverage_80,
               cast(max(backtest_coverage_95) as double) as backtest_coverage_95,
               min(cast(day as date)) as first_day,
               max(cast(day as date)) as last_day,
               count(*) filter (where cast(day as date) > cast(trained_through as date))
                   as horizon_days
        from main.fct_forecast
        group by 1, 2
        order by 1, 2
        """,
    )


def forecast_series(con: Con, series: str, scope: str) -> pd.DataFrame:
    """One series and scope day by day: the forecast, its 80/95/99 % intervals and the model.

    Columns: every column of fct_forecast (the contract's, plus `actual`, `horizon`, `cum_yhat`,
    `cum_lo_80`, `cum_hi_80` where the mart has them), `day` as a date; ordered by day.
    """
    df = _query(
        con,
        "select * from main.fct_forecast where series = ? and scope = ? order by day",
        (series, scope),
    )
    df["day"] = pd.to_datetime(df["day"]).dt.date
    return df


def capacity(con: Con) -> pd.DataFrame:
    """Fleet size against peak GPU demand per capacity scope and day (fct_capacity).

    Columns: scope, day, fleet_gpus, peak_gpus_demand, peak_gpus_hi_80, runway_day.
    """
    return _query(
        con,
        """
        select scope, cast(day as date) as day,
               cast(fleet_gpus as double) as fleet_gpus,
               cast(peak_gpus_demand as double) as peak_gpus_demand,
               cast(peak_gpus_hi_80 as double) as peak_gpus_hi_80,
               cast(runway_day as date) as runway_day
        from main.fct_capacity
        order by scope, day
        """,
    )


def runway(con: Con) -> pd.DataFrame:
    """Per capacity scope: the fleet, the highest demand seen or forecast, and the runway day.

    `runway_day` is the first future day whose 80 % upper demand exceeds the fleet (null: none
    in the horizon). Columns: scope, fleet_gpus, max_peak_gpus_demand, max_peak_gpus_hi_80,
    runway_day. Reads fct_capacity.scope, fleet_gpus, peak_gpus_demand, peak_gpus_hi_80,
    runway_day.
    """
    return _query(
        con,
        """
        select scope,
               cast(max(fleet_gpus) as double) as fleet_gpus,
               cast(max(peak_gpus_demand) as double) as max_peak_gpus_demand,
               cast(max(peak_gpus_hi_80) as double) as max_peak_gpus_hi_80,
               min(cast(runway_day as date)) as runway_day
        from main.fct_capacity
        group by 1
        order by 1
        """,
    )
