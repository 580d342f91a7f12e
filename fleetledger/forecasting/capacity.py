"""`fct_capacity`: the peak concurrent GPU demand per day against the fleet's GPUs, and the
runway (docs/forecasts.md, "Capacity and runway")."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

import polars as pl

CAPACITY_SCHEMA: dict[str, pl.DataType] = {
    "scope": pl.Utf8(),
    "day": pl.Date(),
    "fleet_gpus": pl.Int64(),
    "peak_gpus_demand": pl.Float64(),
    "peak_gpus_hi_80": pl.Float64(),
    "is_forecast": pl.Boolean(),
    "runway_day": pl.Date(),
}


def runway_day(days: Sequence[date], hi_80: Sequence[float | None], fleet_gpus: int) -> date | None:
    """The first day whose upper 80 % bound of peak demand exceeds the fleet's GPUs (days in
    order), None when no day of the horizon does."""
    for day, hi in zip(days, hi_80, strict=True):
        if hi is not None and hi > fleet_gpus:
            return day
    return None


def capacity_frame(
    actuals: pl.DataFrame, forecasts: pl.DataFrame, fleet: dict[str, int]
) -> pl.DataFrame:
    """One row per scope (`total`, `site:<s>`) and day: the actual peak demand on past days
    (`actuals`: the peak_gpus series, scope/day/y) and the forecast's yhat and upper 80 % bound
    after (`forecasts`: fct_forecast's peak_gpus rows with horizon > 0); `fleet_gpus` from
    `fleet` (0 for a site the fleet has no GPU at), the runway on every row of the scope."""
    past = actuals.select(
        "scope",
        "day",
        pl.col("y").cast(pl.Float64).alias("peak_gpus_demand"),
        pl.lit(None, pl.Float64).alias("peak_gpus_hi_80"),
        pl.lit(False).alias("is_forecast"),
    )
    future = forecasts.filter(pl.col("horizon") > 0).select(
        "scope",
        "day",
        pl.col("yhat").cast(pl.Float64).alias("peak_gpus_demand"),
        pl.col("hi_80").cast(pl.Float64).alias("peak_gpus_hi_80"),
        pl.lit(True).alias("is_forecast"),
    )
    rows = pl.concat([past, future]).sort("scope", "day")
    if rows.height == 0:
        return pl.DataFrame(schema=CAPACITY_SCHEMA)
    sizes = pl.DataFrame(
        {"scope": list(fleet), "fleet_gpus": list(fleet.values())},
        schema={"scope": pl.Utf8, "fleet_gpus": pl.Int64},
    )
    rows = rows.join(sizes, on="scope", how="left").with_columns(pl.col("fleet_gpus").fill_null(0))
    runways = []
    for (scope,), grp in rows.filter(pl.col("is_forecast")).group_by(
        ["scope"], maintain_order=True
    ):
        runways.append(
            {
                "scope": scope,
                "runway_day": runway_day(
                    grp["day"].to_list(), grp["peak_gpus_hi_80"].to_list(), grp["fleet_gpus"][0]
                ),
            }
        )
    runway = pl.DataFrame(runways, schema={"scope": pl.Utf8, "runway_day": pl.Date})
    return rows.join(runway, on="scope", how="left").select(list(CAPACITY_SCHEMA))
