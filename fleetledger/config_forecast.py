"""The `forecast:` config schema (docs/forecasts.md): horizon, back-test and history settings of
the forecasts (`fct_forecast`, `fct_capacity`)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

#: the weekly season of every model
SEASON_DAYS = 7
#: days between two back-test origins
BACKTEST_STEP_DAYS = 3


class ForecastSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    # days forecast after the last actual day (at least through the end of the calendar
    # quarter after it, so a quarterly budget's period end is always in the horizon)
    horizon_days: int = Field(default=90, ge=1, le=730)
    # the last N actual days of each spend series carry a one-step-ahead forecast trained
    # through the day before (the spend_anomaly alert rule judges a day against it)
    anomaly_lookback_days: int = Field(default=7, ge=0, le=90)
    # a series with fewer days than this gets SeasonalNaive or a flat mean and
    # insufficient_history = true instead of a back-tested model choice
    min_history_days: int = Field(default=3 * SEASON_DAYS, ge=2 * SEASON_DAYS + 1, le=365)
    # rolling-origin back-test: up to this many windows, origins BACKTEST_STEP_DAYS apart, each
    # holding out the next `backtest_horizon_days` days (fewer windows when the history is
    # short: every origin keeps two full weeks to train on)
    backtest_windows: int = Field(default=3, ge=1, le=12)
    backtest_horizon_days: int = Field(default=SEASON_DAYS, ge=1, le=28)
    # a series ends at the last day every feed of it delivered (a billing export a day behind
    # ends the spend series a day early); a feed further behind the last accounted day than
    # this is not waited for (it stopped; its missing days are reported as gaps)
    max_feed_lag_days: int = Field(default=3, ge=0, le=60)

    @model_validator(mode="after")
    def _room_to_backtest(self) -> ForecastSettings:
        # the one back-test window of the shortest full series must leave two weeks to train on
        need = 2 * SEASON_DAYS + self.backtest_horizon_days
        if self.min_history_days < need:
            raise ValueError(
                f"min_history_days ({self.min_history_days}) must be at least {need} "
                f"({2 * SEASON_DAYS} days to train on + backtest_horizon_days held out)"
            )
        return self
