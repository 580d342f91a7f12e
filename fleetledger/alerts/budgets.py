"""`fct_budget_status` (budget, period_start): spend to date against each budget, and the
forecast period end (DESIGN.md, "Forecasts, budgets and alerts"; docs/alerts.md).

Pure functions over frames, so they are tested on hand-made tables:

- `spend` (one row per day and piece of spend, reporting currency): `day`, `team`, `provider`,
  `sub_account`, `service`, `cost` (EffectiveCost), `shared_idle_cost`. The engine reads it from
  fct_daily_spend's pieces (fleetledger/alerts/inputs.py).
- `forecast`: fct_forecast rows (series `spend`), or None when the mart is absent.

Spend to date of a team budget is the team's `cost` (its direct run cost and the bill lines
attributed to it), plus its `shared_idle_cost` with `include_shared_idle`; a provider, a
sub-account or the whole bill (empty scope) count every piece's `cost` in scope. The forecast
period end is spend to date + the forecast's total of the remaining days (`cum_yhat` at the
period's last day, trained through the last actual day), its 80 % bounds the bounds of that
total (`cum_lo_80`, `cum_hi_80`): never a sum of daily bounds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, timedelta

import polars as pl

from fleetledger.config_alerts import Budget
from ingest.core.findings import IngestFinding

STATUS_SCHEMA: dict[str, pl.DataType | type[pl.DataType]] = {
    "budget": pl.Utf8,
    "period_start": pl.Date,
    "period_end": pl.Date,
    "period": pl.Utf8,
    "scope": pl.Utf8,
    "team": pl.Utf8,
    "amount": pl.Float64,
    "currency": pl.Utf8,
    "amount_reporting": pl.Float64,
    "reporting_currency": pl.Utf8,
    "spend_to_date": pl.Float64,
    "data_through": pl.Date,
    "period_complete": pl.Boolean,
    "forecast_period_end": pl.Float64,
    "forecast_lo_80": pl.Float64,
    "forecast_hi_80": pl.Float64,
    "forecast_trained_through": pl.Date,
    "forecast_model": pl.Utf8,
    "used_share": pl.Float64,
    "forecast_used_share": pl.Float64,
    "thresholds_crossed_actual": pl.List(pl.Float64),
    "thresholds_crossed_forecast": pl.List(pl.Float64),
}


@dataclass
class BudgetStatus:
    frame: pl.DataFrame
    findings: list[IngestFinding] = field(default_factory=list)


def period_start(day: date, period: str) -> date:
    """The first day of the calendar month or quarter (UTC) holding `day`."""
    if period == "month":
        return day.replace(day=1)
    return date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)


def next_period(start: date, period: str) -> date:
    months = 1 if period == "month" else 3
    m = start.month - 1 + months
    return date(start.year + m // 12, m % 12 + 1, 1)


def scope_label(budget: Budget) -> str:
    """The budget's scope as fct_forecast names it (`team:<t>`, `team:<t>+shared_idle`,
    `provider:<p>`, `sub_account:<id>`, `total`)."""
    kind = budget.scope.kind()
    if kind == "total":
        return "total"
    label = f"{kind}:{budget.scope.value()}"
    return f"{label}+shared_idle" if budget.include_shared_idle else label


def scope_spend(spend: pl.DataFrame, budget: Budget) -> pl.DataFrame:
    """Daily spend in the budget's scope: `day`, `spend`."""
    kind = budget.scope.kind()
    value = budget.scope.value()
    amount = pl.col("cost")
    if budget.include_shared_idle:
        amount = amount + pl.col("shared_idle_cost").fill_null(0.0)
    rows = spend if kind == "total" else spend.filter(pl.col(kind) == value)
    return rows.group_by("day").agg(amount.fill_null(0.0).sum().alias("spend"))


def _rate(budget: Budget, reporting: str, rates: dict[str, float]) -> float | None:
    currency = budget.currency or reporting
    if currency == reporting:
        return 1.0
    return rates.get(currency)


def _forecast_rows(forecast: pl.DataFrame | None, scope: str) -> pl.DataFrame | None:
    """The scope's future spend rows trained through its last actual day, or None."""
    if forecast is None or forecast.height == 0:
        return None
    rows = forecast.filter(
        (pl.col("series") == "spend") & (pl.col("scope") == scope) & pl.col("actual").is_null()
    )
    if rows.height == 0:
        return None
    last = rows["trained_through"].max()
    return rows.filter(pl.col("trained_through") == last)


def budget_status(
    budgets: list[Budget],
    spend: pl.DataFrame,
    forecast: pl.DataFrame | None,
    *,
    reporting_currency: str,
    currency_rates: dict[str, float],
    data_through: date | None = None,
) -> BudgetStatus:
    """One row per budget and period from the first day of spend through `data_through`
    (default: the last day of `spend`)."""
    findings: list[IngestFinding] = []
    if spend.height == 0:
        return BudgetStatus(pl.DataFrame(schema=STATUS_SCHEMA), findings)
    first: date = spend["day"].min()  # type: ignore[assignment]
    through: date = data_through or spend["day"].max()  # type: ignore[assignment]
    rows: list[dict[str, object]] = []
    for b in budgets:
        rate = _rate(b, reporting_currency, currency_rates)
        currency = b.currency or reporting_currency
        if rate is None:
            findings.append(
                IngestFinding(
                    f"budget_currency:{b.name}",
                    f"budget {b.name}: no currency_rates entry for {currency}; its status is "
                    f"not computed (add currency_rates: {{{currency}: <rate to "
                    f"{reporting_currency}>}})",
                )
            )
            continue
        amount_rep = b.amount * rate
        daily = scope_spend(spend, b)
        scope = scope_label(b)
        fc = _forecast_rows(forecast, scope)
        start = period_start(first, b.period)
        while start <= through:
            end = next_period(start, b.period) - timedelta(days=1)
            rows.append(
                _status_row(
                    b, scope, start, end, through, daily, fc, amount_rep, currency,
                    reporting_currency, findings,
                )
            )  # fmt: skip
            start = end + timedelta(days=1)
    frame = pl.DataFrame(rows, schema=STATUS_SCHEMA) if rows else pl.DataFrame(schema=STATUS_SCHEMA)
    return BudgetStatus(frame, findings)


def _sum(daily: pl.DataFrame, start: date, end: date) -> float:
    part = daily.filter((pl.col("day") >= start) & (pl.col("day") <= end))
    return float(part["spend"].sum() or 0.0)


def _status_row(
    b: Budget,
    scope: str,
    start: date,
    end: date,
    through: date,
    daily: pl.DataFrame,
    fc: pl.DataFrame | None,
    amount_rep: float,
    currency: str,
    reporting: str,
    findings: list[IngestFinding],
) -> dict[str, object]:
    spent = _sum(daily, start, min(end, through))
    complete = end <= through
    fc_end = fc_lo = fc_hi = None
    trained: date | None = None
    model: str | None = None
    if complete:
        fc_end = fc_lo = fc_hi = spent
    elif "forecast" in b.basis:
        fc_end, fc_lo, fc_hi, trained, model = _forecast_end(
            b, scope, start, end, daily, fc, findings
        )
    thresholds = [float(t) for t in b.thresholds]
    return {
        "budget": b.name,
        "period_start": start,
        "period_end": end,
        "period": b.period,
        "scope": scope.removesuffix("+shared_idle"),
        "team": b.team,
        "amount": float(b.amount),
        "currency": currency,
        "amount_reporting": amount_rep,
        "reporting_currency": reporting,
        "spend_to_date": spent,
        "data_through": min(end, through),
        "period_complete": complete,
        "forecast_period_end": fc_end,
        "forecast_lo_80": fc_lo,
        "forecast_hi_80": fc_hi,
        "forecast_trained_through": trained,
        "forecast_model": model,
        "used_share": spent / amount_rep,
        "forecast_used_share": None if fc_end is None else fc_end / amount_rep,
        "thresholds_crossed_actual": [t for t in thresholds if spent >= t * amount_rep],
        "thresholds_crossed_forecast": (
            [] if fc_lo is None else [t for t in thresholds if fc_lo > t * amount_rep]
        ),
    }


def _forecast_end(
    b: Budget,
    scope: str,
    start: date,
    end: date,
    daily: pl.DataFrame,
    fc: pl.DataFrame | None,
    findings: list[IngestFinding],
) -> tuple[float | None, float | None, float | None, date | None, str | None]:
    """Spend through the forecast's training day + the forecast total of the days after it."""
    none = (None, None, None, None, None)
    check = f"budget_forecast_missing:{b.name}"
    if fc is None:
        findings.append(
            IngestFinding(
                check,
                f"budget {b.name}: fct_forecast has no spend forecast for scope {scope}; the "
                f"forecast basis of {start} is skipped",
            )
        )
        return none
    trained: date = fc["trained_through"].max()  # type: ignore[assignment]
    row = fc.filter(pl.col("day") == end)
    if trained < start - timedelta(days=1) or row.height == 0:
        findings.append(
            IngestFinding(
                check,
                f"budget {b.name}: the spend forecast of {scope} (trained through {trained}) "
                f"does not cover {start}..{end}; the forecast basis is skipped",
            )
        )
        return none
    base = _sum(daily, start, trained)
    r = row.row(0, named=True)
    if r["cum_lo_80"] is None or r["cum_hi_80"] is None:
        # a series with one day of history has a forecast but no interval (docs/forecasts.md)
        findings.append(
            IngestFinding(
                check,
                f"budget {b.name}: the spend forecast of {scope} has no interval yet (too little "
                "history); the forecast basis is skipped",
            )
        )
        return none
    return (
        base + float(r["cum_yhat"]),
        base + float(r["cum_lo_80"]),
        base + float(r["cum_hi_80"]),
        trained,
        r.get("model"),
    )
