"""Hand-made frames for the budget and alert tests (figures in the tests' comments)."""

from __future__ import annotations

from datetime import date, timedelta

import polars as pl

FORECAST_SCHEMA = {
    "series": pl.Utf8,
    "scope": pl.Utf8,
    "day": pl.Date,
    "actual": pl.Float64,
    "yhat": pl.Float64,
    "lo_80": pl.Float64,
    "hi_80": pl.Float64,
    "lo_95": pl.Float64,
    "hi_95": pl.Float64,
    "lo_99": pl.Float64,
    "hi_99": pl.Float64,
    "model": pl.Utf8,
    "backtest_error": pl.Float64,
    "backtest_coverage_80": pl.Float64,
    "backtest_coverage_95": pl.Float64,
    "insufficient_history": pl.Boolean,
    "trained_through": pl.Date,
    "horizon": pl.Int64,
    "cum_yhat": pl.Float64,
    "cum_lo_80": pl.Float64,
    "cum_hi_80": pl.Float64,
}


def forecast_row(**values: object) -> dict[str, object]:
    row: dict[str, object] = {k: None for k in FORECAST_SCHEMA}
    row.update({"series": "spend", "model": "AutoETS", "insufficient_history": False})
    row.update(values)
    return row


def forecast(rows: list[dict[str, object]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=FORECAST_SCHEMA)


def days(first: date, n: int) -> list[date]:
    return [first + timedelta(days=i) for i in range(n)]


SPEND_SCHEMA = {
    "day": pl.Date,
    "team": pl.Utf8,
    "provider": pl.Utf8,
    "sub_account": pl.Utf8,
    "service": pl.Utf8,
    "cost": pl.Float64,
    "shared_idle_cost": pl.Float64,
}


def spend(rows: list[tuple[object, ...]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=SPEND_SCHEMA, orient="row")
