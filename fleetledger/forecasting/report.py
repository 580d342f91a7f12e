"""`fleetledger forecast`: the headline forecast from the published warehouse's fct_forecast and
fct_capacity (every number comes from those marts)."""

from __future__ import annotations

from pathlib import Path

import duckdb
from rich.console import Console
from rich.table import Table

#: the horizons the headline sums over (days after the last actual day)
HEADLINE_DAYS = (30, 90)

_TOTALS_SQL = """
select series, horizon, cum_yhat, cum_lo_80, cum_hi_80, model, backtest_error,
       backtest_coverage_80, insufficient_history, trained_through, unit
from main.fct_forecast
where scope = 'total' and series in ('spend', 'gpu_hours') and horizon in (?, ?)
order by series desc, horizon
"""

_RUNWAY_SQL = """
select scope, max(fleet_gpus) as fleet_gpus,
       max(peak_gpus_demand) filter (where not is_forecast) as peak_actual,
       max(peak_gpus_hi_80) filter (where is_forecast) as peak_hi_80,
       max(runway_day) as runway_day, max(day) as horizon_end
from main.fct_capacity group by scope
order by scope = 'total', scope
"""


class ForecastUnavailable(RuntimeError):
    """The warehouse has no forecast (not built yet, or built before the forecasts existed)."""


def _fmt(value: object, unit: str) -> str:
    if value is None:
        return "-"
    number = float(value)  # type: ignore[arg-type]
    return f"{number:,.0f} {unit}" if unit else f"{number:,.0f}"


def print_forecast(warehouse: Path, console: Console) -> None:
    if not warehouse.exists():
        raise ForecastUnavailable(f"{warehouse} does not exist (run `fleetledger run` first)")
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        tables = {
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'main'"
            ).fetchall()
        }
        if not {"fct_forecast", "fct_capacity"} <= tables:
            raise ForecastUnavailable(
                f"{warehouse} has no fct_forecast / fct_capacity (run `fleetledger run` again)"
            )
        totals = con.execute(_TOTALS_SQL, list(HEADLINE_DAYS)).fetchall()
        runway = con.execute(_RUNWAY_SQL).fetchall()
    finally:
        con.close()
    if not totals:
        console.print("no forecast: the warehouse has no accounted days yet")
        return
    through = totals[0][9]
    t = Table(title=f"Forecast (data through {through}; 80 % interval)", title_justify="left")
    for col in ("series", "next", "forecast", "80 % interval", "model", "back-test sMAPE"):
        t.add_column(col, justify="right" if col not in ("series", "model") else "left")
    for series, horizon, cum, lo, hi, model, err, _cov, short, _tt, unit in totals:
        label = "spend" if series == "spend" else "GPU-hours (held)"
        shown_unit = unit if series == "spend" else ""
        model_text = f"{model}{' (short history)' if short else ''}"
        t.add_row(
            label,
            f"{horizon} days",
            _fmt(cum, shown_unit),
            f"{_fmt(lo, '')} – {_fmt(hi, '')}",
            model_text,
            "-" if err is None else f"{100 * float(err):.1f}%",
        )
    console.print(t)
    t = Table(title="GPU capacity: peak concurrent demand vs the fleet", title_justify="left")
    for col in ("scope", "fleet GPUs", "peak so far", "peak (upper 80 %)", "runway"):
        t.add_column(col, justify="left" if col in ("scope", "runway") else "right")
    for scope, fleet, peak, hi, day, end in runway:
        when = str(day) if day else f"beyond {end}"
        t.add_row(str(scope), str(fleet), _fmt(peak, ""), _fmt(hi, ""), when)
    console.print(t)
