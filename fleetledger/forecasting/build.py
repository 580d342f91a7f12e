"""Build `fct_forecast` and `fct_capacity` into the build warehouse, after dbt and before
publish (the `forecasts` Dagster asset calls `build_forecasts`): read the series from the marts,
forecast them, write both tables to schema `main`, and add what the forecasts found to this
run's `fct_data_health` rows, so the console summary and the data-health view show it."""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from pathlib import Path

import duckdb
import polars as pl

from fleetledger.config import Config
from fleetledger.config_forecast import ForecastSettings
from fleetledger.forecasting.capacity import capacity_frame
from fleetledger.forecasting.choices import ChoiceCache
from fleetledger.forecasting.forecast import ForecastOutput, forecast_series
from fleetledger.forecasting.notes import ForecastNote
from fleetledger.forecasting.series import FleetSeries, SeriesRequest, fleet_gpus, read_series
from fleetledger.publish import build_path

log = logging.getLogger(__name__)

#: the tables this step writes to schema `main` (marts no dbt model builds)
FORECAST_MARTS = ("fct_forecast", "fct_capacity")
FINDINGS_SOURCE = "forecasts"
#: the back-tested model choices kept for the next runs of the week (choices.py)
CHOICES_FILE = Path("build") / "forecast_choices.json"


@dataclass
class ForecastRun:
    rows: dict[str, int]
    series: int
    seconds: float
    notes: list[ForecastNote] = field(default_factory=list)


def series_request(cfg: Config | None) -> SeriesRequest:
    """The scopes the budgets name, forecast even when the marts hold nothing for them."""
    budgets = cfg.budgets if cfg else []
    return SeriesRequest(
        teams=tuple(sorted({b.scope.team for b in budgets if b.scope.team})),
        shared_idle_teams=tuple(
            sorted({b.scope.team for b in budgets if b.scope.team and b.include_shared_idle})
        ),
        providers=tuple(sorted({b.scope.provider for b in budgets if b.scope.provider})),
        sub_accounts=tuple(sorted({b.scope.sub_account for b in budgets if b.scope.sub_account})),
    )


def _write(con: duckdb.DuckDBPyConnection, name: str, frame: pl.DataFrame) -> None:
    arrow = frame.to_arrow()
    con.register("_forecast_frame", arrow)
    try:
        con.execute(f"create or replace table main.{name} as select * from _forecast_frame")
    finally:
        con.unregister("_forecast_frame")


def _record_notes(
    con: duckdb.DuckDBPyConnection, run_id: str | None, notes: list[ForecastNote]
) -> None:
    tables = {
        r[0]
        for r in con.execute(
            "select table_name from information_schema.tables where table_schema = 'main'"
        ).fetchall()
    }
    if not notes or run_id is None or "fct_data_health" not in tables:
        return
    rows = con.execute(
        "select max(run_at) from main.fct_data_health where run_id = ?", [run_id]
    ).fetchall()
    run_at = rows[0][0] if rows and rows[0][0] else datetime.now(UTC).replace(tzinfo=None)
    con.execute(
        "delete from main.fct_data_health where run_id = ? and source = ?",
        [run_id, FINDINGS_SOURCE],
    )
    con.executemany(
        'insert into main.fct_data_health (run_at, run_id, source, day, "check", severity, '
        "count, message) values (?, ?, ?, null, ?, ?, ?, ?)",
        [[run_at, run_id, FINDINGS_SOURCE, n.check, n.severity, n.count, n.message] for n in notes],
    )


def merge_notes(notes: list[ForecastNote]) -> list[ForecastNote]:
    """One note per check (fct_data_health holds one row per run, source, day and check): the
    same check from two forecast passes is one note, counts summed, messages joined."""
    merged: dict[str, ForecastNote] = {}
    for n in notes:
        was = merged.get(n.check)
        merged[n.check] = (
            n
            if was is None
            else ForecastNote(
                n.check,
                was.severity,
                f"{was.message}; {n.message}",
                was.count + n.count,
            )
        )
    return list(merged.values())


def forecast_by_end(
    fleet_series: FleetSeries, settings: ForecastSettings, cache: ChoiceCache | None = None
) -> ForecastOutput:
    """Forecast each group of series that ends on the same day (freshness.py: a series ends at
    the last day its feeds delivered), trained through that day; the freshness notes first.
    `cache` keeps the back-tested model choices between runs (choices.py)."""
    frame, ends = fleet_series.frame, fleet_series.ends
    last = fleet_series.last_day
    if last is None or frame.height == 0:
        out = forecast_series(frame, last, settings, fleet_series.currency, cache)
        return ForecastOutput(out.frame, merge_notes([*fleet_series.notes, *out.notes]))
    groups: dict[date, list[str]] = {}
    for series in sorted(frame["series"].unique().to_list()):
        groups.setdefault(ends.get(series, last), []).append(series)
    parts, notes = [], list(fleet_series.notes)
    for end, names in sorted(groups.items()):
        out = forecast_series(
            frame.filter(pl.col("series").is_in(names)), end, settings, fleet_series.currency, cache
        )
        parts.append(out.frame)
        notes += out.notes
    return ForecastOutput(pl.concat(parts).sort("series", "scope", "day"), merge_notes(notes))


def build_forecasts(home: Path, cfg: Config | None, run_id: str | None = None) -> ForecastRun:
    """Forecast every series of the build warehouse of `home` and write fct_forecast and
    fct_capacity there; `run_id` stamps the findings in fct_data_health."""
    t0 = time.monotonic()
    settings = cfg.forecast if cfg else ForecastSettings()
    cache = ChoiceCache.load(home / CHOICES_FILE)
    con = duckdb.connect(str(build_path(home)))
    try:
        fleet_series = read_series(con, series_request(cfg), settings.max_feed_lag_days)
        out = forecast_by_end(fleet_series, settings, cache)
        peak = fleet_series.frame.filter(pl.col("series") == "peak_gpus")
        capacity = capacity_frame(
            peak,
            out.frame.filter(pl.col("series") == "peak_gpus"),
            fleet_gpus(con, fleet_series.tables),
        )
        con.execute("begin transaction")
        _write(con, "fct_forecast", out.frame)
        _write(con, "fct_capacity", capacity)
        _record_notes(con, run_id, out.notes)
        con.execute("commit")
    finally:
        con.close()
    cache.save()
    log.info(
        "forecasts: %d model choices kept from earlier runs, %d back-tested",
        cache.hits,
        cache.misses,
    )
    for note in out.notes:
        level = logging.WARNING if note.severity != "info" else logging.INFO
        log.log(level, "forecasts: %s", note.message)
    n_series = fleet_series.frame.select("series", "scope").unique().height
    return ForecastRun(
        rows={"fct_forecast": out.frame.height, "fct_capacity": capacity.height},
        series=n_series,
        seconds=time.monotonic() - t0,
        notes=out.notes,
    )
