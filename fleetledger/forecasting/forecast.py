"""`fct_forecast` from the daily series: choose a model per series, forecast the horizon, add
the one-step-ahead rows of the spend series (docs/forecasts.md)."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import date, timedelta

import numpy as np
import pandas as pd
import polars as pl

from fleetledger.config_forecast import ForecastSettings
from fleetledger.forecasting.choices import ChoiceCache, choice_history
from fleetledger.forecasting.models import (
    FLAT_MEAN,
    LEVELS,
    Choice,
    Forecast,
    backtest,
    forecast,
    n_windows,
    one_step_ahead,
    pick,
    score_backtest,
    short_series_model,
)
from fleetledger.forecasting.notes import ForecastNote
from fleetledger.forecasting.series import UNITS

log = logging.getLogger(__name__)

BOUND_COLUMNS = [f"{side}_{level}" for level in LEVELS for side in ("lo", "hi")]
FORECAST_SCHEMA: dict[str, pl.DataType] = {
    "series": pl.Utf8(),
    "scope": pl.Utf8(),
    "day": pl.Date(),
    "yhat": pl.Float64(),
    **{c: pl.Float64() for c in BOUND_COLUMNS},
    "model": pl.Utf8(),
    "backtest_error": pl.Float64(),
    "backtest_coverage_80": pl.Float64(),
    "backtest_coverage_95": pl.Float64(),
    "insufficient_history": pl.Boolean(),
    "trained_through": pl.Date(),
    "actual": pl.Float64(),
    "cum_yhat": pl.Float64(),
    "cum_lo_80": pl.Float64(),
    "cum_hi_80": pl.Float64(),
    "horizon": pl.Int32(),
    "history_days": pl.Int32(),
    "backtest_windows": pl.Int32(),
    "unit": pl.Utf8(),
}


@dataclass
class ForecastOutput:
    frame: pl.DataFrame
    notes: list[ForecastNote] = field(default_factory=list)


def quarter_end(day: date) -> date:
    """The last day of the calendar quarter holding `day`."""
    first_next = date(day.year + (day.month > 9), (((day.month - 1) // 3 + 1) * 3) % 12 + 1, 1)
    return first_next - timedelta(days=1)


def horizon_days(trained_through: date, settings: ForecastSettings) -> int:
    """`forecast.horizon_days`, or more: through the end of the calendar quarter holding the
    first forecast day, so a quarterly budget's period end is always forecast."""
    to_quarter_end = (quarter_end(trained_through + timedelta(days=1)) - trained_through).days
    return max(settings.horizon_days, to_quarter_end)


@dataclass
class _Series:
    series: str
    scope: str
    first_day: date
    y: np.ndarray


def _split(frame: pl.DataFrame) -> list[_Series]:
    out = []
    for (series, scope), grp in frame.sort("day").group_by(
        ["series", "scope"], maintain_order=True
    ):
        days = grp["day"]
        out.append(_Series(str(series), str(scope), days[0], grp["y"].to_numpy().astype(float)))
    return out


def _key(s: _Series) -> tuple[date, bytes]:
    # identical histories (a provider with one sub-account and one service) are forecast once
    return s.first_day, np.round(s.y, 9).tobytes()


def choose_models(
    histories: dict[str, np.ndarray],
    settings: ForecastSettings,
    backtest_on: dict[str, np.ndarray] | None = None,
    cache: ChoiceCache | None = None,
) -> tuple[dict[str, Choice], list[ForecastNote]]:
    """The model of each series (id -> daily values): a back-tested choice with enough history,
    the short-series model otherwise. The back-test reads `backtest_on[id]` (the series through
    its selection day, choices.py; default: the whole series); a choice `cache` holds is reused."""
    choices: dict[str, Choice] = {}
    notes: list[ForecastNote] = []
    by_windows: dict[int, list[str]] = {}
    keys: dict[str, str] = {}
    on = backtest_on or histories
    for uid, y in histories.items():
        if y.size < settings.min_history_days:
            choices[uid] = Choice(short_series_model(y.size), insufficient_history=True)
            continue
        windows = n_windows(on[uid].size, settings)
        if cache is not None:
            keys[uid] = cache.key(uid, on[uid], windows, settings)
            kept = cache.get(keys[uid])
            if kept is not None:
                choices[uid] = kept
                continue
        by_windows.setdefault(windows, []).append(uid)
    for windows, uids in by_windows.items():
        df = pd.concat(
            [
                pd.DataFrame(
                    {
                        "unique_id": uid,
                        "ds": pd.date_range("2000-01-01", periods=on[uid].size, freq="D"),
                        "y": on[uid],
                    }
                )
                for uid in uids
            ],
            ignore_index=True,
        )
        try:
            scores = score_backtest(backtest(df, windows, settings))
        except Exception as err:  # noqa: BLE001 - retried series by series below
            log.warning("back-test of %d series failed (%s); retrying one by one", len(uids), err)
            scores = _scores_one_by_one(df, windows, settings)
        for uid in uids:
            choice = pick(scores[scores["unique_id"] == uid], windows)
            if choice is None:
                notes.append(
                    ForecastNote(
                        "forecast_backtest_failed",
                        "warning",
                        f"{uid}: every candidate model failed in the back-test; a flat mean is "
                        "used",
                    )
                )
                choice = Choice(FLAT_MEAN, insufficient_history=False)
            elif cache is not None:
                cache.put(keys[uid], choice)
            choices[uid] = choice
    return choices, notes


def _scores_one_by_one(df: pd.DataFrame, windows: int, settings: ForecastSettings) -> pd.DataFrame:
    parts = []
    for _uid, one in df.groupby("unique_id", sort=False):
        try:
            parts.append(score_backtest(backtest(one, windows, settings)))
        except Exception:  # noqa: BLE001 - the series falls back to the flat mean
            continue
    if not parts:
        return score_backtest(pd.DataFrame(columns=["unique_id", "y"]))
    return pd.concat(parts, ignore_index=True)


def _forecast_or_fallback(
    uid: str, y: np.ndarray, choice: Choice, h: int, notes: list[ForecastNote]
) -> tuple[Forecast, Choice]:
    try:
        return forecast(y, choice.model, h), choice
    except Exception as err:  # noqa: BLE001 - a failed fit falls back to the flat mean
        notes.append(
            ForecastNote(
                "forecast_model_failed",
                "warning",
                f"{uid}: {choice.model} failed to fit ({type(err).__name__}); a flat mean is used",
            )
        )
        fallback = Choice(FLAT_MEAN, choice.insufficient_history)
        return forecast(y, FLAT_MEAN, h), fallback


def _rows(
    s: _Series,
    fc: Forecast,
    choice: Choice,
    model: str,
    days: list[date],
    trained_through: list[date],
    horizon: list[int],
    actual: np.ndarray,
) -> pl.DataFrame:
    n = len(days)
    data: dict[str, object] = {
        "series": [s.series] * n,
        "scope": [s.scope] * n,
        "day": days,
        "yhat": fc.yhat,
        **{c: fc.bounds[c] for c in BOUND_COLUMNS},
        "model": [model] * n,
        "backtest_error": [choice.backtest_error] * n,
        "backtest_coverage_80": [choice.backtest_coverage_80] * n,
        "backtest_coverage_95": [choice.backtest_coverage_95] * n,
        "insufficient_history": [choice.insufficient_history] * n,
        "trained_through": trained_through,
        "actual": actual,
        "cum_yhat": fc.cum_yhat,
        "cum_lo_80": fc.cum_lo_80,
        "cum_hi_80": fc.cum_hi_80,
        "horizon": horizon,
        "history_days": [int(s.y.size)] * n,
        "backtest_windows": [choice.backtest_windows] * n,
        "unit": [UNITS.get(s.series, "")] * n,
    }
    return pl.DataFrame(data, schema=FORECAST_SCHEMA).with_columns(
        pl.col(c).fill_nan(None) for c in [*BOUND_COLUMNS, "cum_lo_80", "cum_hi_80", "actual"]
    )


def forecast_series(
    frame: pl.DataFrame,
    last_day: date | None,
    settings: ForecastSettings,
    currency: str = "USD",
    cache: ChoiceCache | None = None,
) -> ForecastOutput:
    """fct_forecast's rows for the long frame of series (series, scope, day, y; every series
    dense through `last_day`): the horizon's future days of every series, trained through
    `last_day`, and for `spend` series the last `anomaly_lookback_days` actual days, each
    forecast with the data through the day before. Each model is chosen on the series through
    its selection day (choices.py); `cache` keeps the choices between runs."""
    if last_day is None or frame.height == 0:
        return ForecastOutput(pl.DataFrame(schema=FORECAST_SCHEMA))
    series = _split(frame)
    unique: dict[tuple[date, bytes], _Series] = {}
    uid_of: dict[int, str] = {}
    ids: dict[tuple[date, bytes], str] = {}
    for i, s in enumerate(series):
        key = _key(s)
        if key not in ids:
            ids[key] = f"{s.series}|{s.scope}"
            unique[key] = s
        uid_of[i] = ids[key]
    histories = {ids[k]: s.y for k, s in unique.items()}
    backtest_on = {
        ids[k]: choice_history(s.y, s.first_day, last_day, settings.min_history_days)
        for k, s in unique.items()
    }
    choices, notes = choose_models(histories, settings, backtest_on, cache)
    h = horizon_days(last_day, settings)
    future_days = [last_day + timedelta(days=k) for k in range(1, h + 1)]
    forecasts: dict[str, tuple[Forecast, Choice]] = {}
    steps: dict[str, tuple[Forecast, str]] = {}
    parts: list[pl.DataFrame] = []
    for i, s in enumerate(series):
        uid = uid_of[i]
        if uid not in forecasts:
            forecasts[uid] = _forecast_or_fallback(uid, s.y, choices[uid], h, notes)
        fc, choice = forecasts[uid]
        parts.append(
            _rows(
                s,
                fc,
                choice,
                choice.model,
                future_days,
                [last_day] * h,
                list(range(1, h + 1)),
                np.full(h, np.nan),
            )
        )
        if s.series != "spend" or settings.anomaly_lookback_days == 0:
            continue
        if uid not in steps:
            steps[uid] = one_step_ahead(s.y, choice.model, settings.anomaly_lookback_days)
        step, model = steps[uid]
        k = step.yhat.size
        if k == 0:
            continue
        days = [last_day - timedelta(days=k - 1 - j) for j in range(k)]
        parts.append(
            _rows(
                s,
                step,
                choice,
                model,
                days,
                [d - timedelta(days=1) for d in days],
                [(d - last_day).days for d in days],
                s.y[-k:],
            )
        )
    short = sorted(
        f"{s.series}|{s.scope}"
        for i, s in enumerate(series)
        if choices[uid_of[i]].insufficient_history
    )
    if short:
        notes.append(
            ForecastNote(
                "forecast_insufficient_history",
                "info",
                f"{len(short)} series have fewer than {settings.min_history_days} days of "
                f"history (forecast.min_history_days): SeasonalNaive or a flat mean, no "
                f"back-test ({', '.join(short[:5])}{', ...' if len(short) > 5 else ''})",
                count=len(short),
            )
        )
    out = pl.concat(parts).with_columns(
        pl.when(pl.col("series") == "spend")
        .then(pl.lit(currency))
        .otherwise(pl.col("unit"))
        .alias("unit")
    )
    return ForecastOutput(out.sort("series", "scope", "day"), notes)
