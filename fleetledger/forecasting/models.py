"""Model choice by rolling-origin back-test, and the forecast of one daily series.

Candidates (statsforecast, weekly season): SeasonalNaive, AutoETS, AutoARIMA. A series with at
least `min_history_days` days is back-tested with `StatsForecast.cross_validation`: up to
`backtest_windows` origins BACKTEST_STEP_DAYS apart, each forecasting the next
`backtest_horizon_days` days; the model with the lowest sMAPE over the held-out days is chosen
(ties go to the simpler model, in CANDIDATES order), and its empirical interval coverage on
those days is kept. A shorter series gets SeasonalNaive (more than a week of history) or a flat
mean (HistoricAverage) with `insufficient_history`. docs/forecasts.md states every rule.
"""

from __future__ import annotations

import warnings
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from fleetledger.config_forecast import BACKTEST_STEP_DAYS, SEASON_DAYS, ForecastSettings

CANDIDATES = ("SeasonalNaive", "AutoETS", "AutoARIMA")
FLAT_MEAN = "FlatMean"
LEVELS = (80, 95, 99)
#: sample paths simulated from the fitted model for the bounds of cumulative sums
N_PATHS = 100
#: the cumulative 80 % bounds: these quantiles of the simulated totals
CUM_QUANTILES = (0.10, 0.90)
#: AutoARIMA's order search, kept small: 30-90 daily points do not support more, and the full
#: search costs ~2x the time (conditional sum of squares is cheaper still, but its forecasts
#: carried forward to later back-test origins were badly off)
ARIMA_SEARCH = {"max_p": 2, "max_q": 2, "max_P": 1, "max_Q": 1, "nmodels": 10}


def new_model(name: str) -> Any:
    """A fresh, unfitted statsforecast model by the name fct_forecast stores."""
    from statsforecast.models import AutoARIMA, AutoETS, HistoricAverage, SeasonalNaive

    if name == "SeasonalNaive":
        return SeasonalNaive(season_length=SEASON_DAYS, alias=name)
    if name == "AutoETS":
        return AutoETS(season_length=SEASON_DAYS, alias=name)
    if name == "AutoARIMA":
        return AutoARIMA(season_length=SEASON_DAYS, alias=name, **ARIMA_SEARCH)
    if name == FLAT_MEAN:
        return HistoricAverage(alias=name)
    raise ValueError(f"unknown model {name!r}")


@contextmanager
def quiet() -> Iterator[None]:
    """statsforecast warns about short series and simulation sizes; the forecasts report what
    matters (insufficient history, a model that failed) as findings instead."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        yield


def smape(y: np.ndarray, yhat: np.ndarray) -> float:
    """Symmetric MAPE as a share: mean of 2|y - ŷ| / (|y| + |ŷ|), a day where both are 0
    counting as 0 (0.12 = 12 %; the range is 0..2)."""
    den = np.abs(y) + np.abs(yhat)
    num = 2.0 * np.abs(y - yhat)
    terms = np.divide(num, den, out=np.zeros_like(num, dtype=float), where=den > 0)
    return float(np.mean(terms)) if terms.size else float("nan")


def coverage(y: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> float:
    """The share of actuals inside [lo, hi]."""
    return float(np.mean((y >= lo) & (y <= hi))) if y.size else float("nan")


def n_windows(n_days: int, settings: ForecastSettings) -> int:
    """How many back-test windows a series of `n_days` days has room for: every origin keeps
    two full weeks to train on."""
    spare = n_days - 2 * SEASON_DAYS - settings.backtest_horizon_days
    if spare < 0:
        return 0
    return min(settings.backtest_windows, 1 + spare // BACKTEST_STEP_DAYS)


@dataclass(frozen=True)
class Choice:
    """The model of one series and what its back-test measured (None without a back-test)."""

    model: str
    insufficient_history: bool
    backtest_error: float | None = None
    backtest_coverage_80: float | None = None
    backtest_coverage_95: float | None = None
    backtest_windows: int = 0


def short_series_model(n_days: int) -> str:
    """The model of a series too short to back-test: SeasonalNaive when it has more than one
    week (a residual to size the intervals by), else the flat mean."""
    return "SeasonalNaive" if n_days > SEASON_DAYS else FLAT_MEAN


def score_backtest(cv: pd.DataFrame, models: tuple[str, ...] = CANDIDATES) -> pd.DataFrame:
    """sMAPE and 80/95 % coverage per series and model of a `cross_validation` frame
    (unique_id, y, <model>, <model>-lo-80, ...): one row per (unique_id, model)."""
    rows = []
    for uid, grp in cv.groupby("unique_id", sort=False):
        y = grp["y"].to_numpy(dtype=float)
        for m in models:
            if m not in grp:
                continue
            yhat = grp[m].to_numpy(dtype=float)
            if not np.isfinite(yhat).all():
                continue  # a model that failed on this series is not a candidate
            rows.append(
                {
                    "unique_id": uid,
                    "model": m,
                    "error": smape(y, yhat),
                    "coverage_80": coverage(
                        y, grp[f"{m}-lo-80"].to_numpy(float), grp[f"{m}-hi-80"].to_numpy(float)
                    ),
                    "coverage_95": coverage(
                        y, grp[f"{m}-lo-95"].to_numpy(float), grp[f"{m}-hi-95"].to_numpy(float)
                    ),
                }
            )
    return pd.DataFrame(rows, columns=["unique_id", "model", "error", "coverage_80", "coverage_95"])


def pick(scores: pd.DataFrame, windows: int) -> Choice | None:
    """The candidate with the lowest sMAPE (the earlier in CANDIDATES on a tie)."""
    if scores.empty:
        return None
    rank = {m: i for i, m in enumerate(CANDIDATES)}
    ordered = scores.assign(
        _err=scores["error"].round(9), _rank=scores["model"].map(rank)
    ).sort_values(["_err", "_rank"])
    best = ordered.iloc[0]
    return Choice(
        model=str(best["model"]),
        insufficient_history=False,
        backtest_error=float(best["error"]),
        backtest_coverage_80=float(best["coverage_80"]),
        backtest_coverage_95=float(best["coverage_95"]),
        backtest_windows=windows,
    )


def backtest(df: pd.DataFrame, windows: int, settings: ForecastSettings) -> pd.DataFrame:
    """`StatsForecast.cross_validation` of every candidate on the series of `df` (unique_id,
    ds, y; each with room for `windows` windows): origins BACKTEST_STEP_DAYS apart, each
    forecasting `backtest_horizon_days` days with 80/95 % intervals. Parameters are fitted at
    the first origin and carried forward (refit=False) to the later ones."""
    from statsforecast import StatsForecast

    sf = StatsForecast(models=[new_model(m) for m in CANDIDATES], freq="D", n_jobs=1)
    with quiet():
        return sf.cross_validation(
            df=df,
            h=settings.backtest_horizon_days,
            n_windows=windows,
            step_size=BACKTEST_STEP_DAYS,
            level=[80, 95],
            refit=False,
        )


def seed_for(y: np.ndarray) -> int:
    """A seed fixed by the series' values: the same series always gets the same paths. The
    values are rounded to 1e-4 first: DuckDB's parallel sums add in a varying order, so two
    builds of the same data differ in the last bits of a day's total, and a seed from the raw
    bytes would draw other paths (other cumulative bounds) on every rebuild."""
    return zlib.crc32(np.ascontiguousarray(np.round(y, 4), dtype=float).tobytes())


@dataclass
class Forecast:
    """Arrays over the horizon: yhat, the daily bounds per level, and the cumulative sums."""

    yhat: np.ndarray
    bounds: dict[str, np.ndarray]  # "lo_80", "hi_80", ... (all NaN when unknown)
    cum_yhat: np.ndarray
    cum_lo_80: np.ndarray
    cum_hi_80: np.ndarray


def _bounds(pred: dict[str, Any], h: int) -> dict[str, np.ndarray]:
    out = {}
    for level in LEVELS:
        for side in ("lo", "hi"):
            value = pred.get(f"{side}-{level}")
            arr = np.full(h, np.nan) if value is None else np.asarray(value, dtype=float)
            out[f"{side}_{level}"] = arr
    return out


def cumulative_bounds(
    paths: np.ndarray, cum_yhat: np.ndarray, nonneg: bool
) -> tuple[np.ndarray, np.ndarray]:
    """80 % bounds of the running total from simulated paths (n_paths x h): the 10th and 90th
    percentiles of the paths' running totals around their mean, added to the forecast's
    running total (so lo <= cum_yhat <= hi); a lower bound below 0 is 0 for a non-negative
    series."""
    totals = np.cumsum(np.clip(paths, 0, None) if nonneg else paths, axis=1)
    dev = totals - totals.mean(axis=0, keepdims=True)
    lo = cum_yhat + np.quantile(dev, CUM_QUANTILES[0], axis=0)
    hi = cum_yhat + np.quantile(dev, CUM_QUANTILES[1], axis=0)
    return (np.clip(lo, 0, None) if nonneg else lo), hi


def forecast(y: np.ndarray, model_name: str, h: int) -> Forecast:
    """Fit `model_name` on `y` (daily, oldest first) and forecast `h` days with 80/95/99 %
    intervals; the cumulative 80 % bounds come from N_PATHS paths simulated from the same
    fit. A non-negative series' forecast and bounds are clipped at 0. With a single day of
    history the bounds are unknown (NaN)."""
    nonneg = bool((y >= 0).all())
    model = new_model(model_name)
    with quiet():
        model.fit(y=y.astype(float))
        pred = model.predict(h=h, level=list(LEVELS))
        yhat = np.asarray(pred["mean"], dtype=float)
        bounds = _bounds(pred, h)
        known = y.size >= 2
        paths = model.simulate(h=h, n_paths=N_PATHS, seed=seed_for(y)) if known else None
    if nonneg:
        yhat = np.clip(yhat, 0, None)
        bounds = {k: np.clip(v, 0, None) for k, v in bounds.items()}
    if not known:
        bounds = {k: np.full(h, np.nan) for k in bounds}
    cum_yhat = np.cumsum(yhat)
    if paths is None or not np.isfinite(paths).all():
        cum_lo = cum_hi = np.full(h, np.nan)
    else:
        cum_lo, cum_hi = cumulative_bounds(np.asarray(paths, dtype=float), cum_yhat, nonneg)
    return Forecast(yhat, bounds, cum_yhat, cum_lo, cum_hi)


def one_step_ahead(y: np.ndarray, model_name: str, days: int) -> tuple[Forecast, str]:
    """For each of the last `days` days of `y`, the forecast of that day made with the data
    through the day before, and the model that made it: `model_name` is fitted once on the
    history before the first of these days (the short-series model when that history is under
    two weeks, the flat mean when the fit fails), then applied forward (its state updated with
    every later day) one day at a time. A day with one day before it has no bounds."""
    days = min(days, y.size - 1)
    nonneg = bool((y >= 0).all())
    start = y.size - days
    if days <= 0:
        empty = np.zeros(0)
        keys = [f"{s}_{lvl}" for lvl in LEVELS for s in ("lo", "hi")]
        return Forecast(empty, {k: empty for k in keys}, empty, empty, empty), model_name
    name = model_name if start >= 2 * SEASON_DAYS else short_series_model(start)
    try:
        yhat, bounds = _forward(y, name, start, days)
    except Exception:  # noqa: BLE001 - any model failure falls back to the flat mean
        name = FLAT_MEAN
        yhat, bounds = _forward(y, name, start, days)
    if nonneg:
        yhat = np.clip(yhat, 0, None)
        bounds = {k: np.clip(v, 0, None) for k, v in bounds.items()}
    # a one-day total is the day itself
    fc = Forecast(yhat, bounds, yhat.copy(), bounds["lo_80"].copy(), bounds["hi_80"].copy())
    return fc, name


def _forward(
    y: np.ndarray, name: str, start: int, days: int
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    yhat = np.full(days, np.nan)
    bounds = {f"{s}_{lvl}": np.full(days, np.nan) for lvl in LEVELS for s in ("lo", "hi")}
    model = new_model(name)
    with quiet():
        model.fit(y=y[:start].astype(float))
        for i in range(days):
            history = y[: start + i].astype(float)
            if hasattr(model, "forward"):
                pred = model.forward(y=history, h=1, level=list(LEVELS))
            else:  # the flat mean has no forward: refitting it is as cheap
                pred = model.fit(y=history).predict(h=1, level=list(LEVELS))
            yhat[i] = float(np.asarray(pred["mean"])[0])
            if history.size >= 2:
                for k, v in _bounds(pred, 1).items():
                    bounds[k][i] = v[0]
    if not np.isfinite(yhat).all():
        raise ValueError(f"{name}: no one-step forecast")
    return yhat, bounds
