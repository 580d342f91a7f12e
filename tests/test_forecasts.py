"""Forecasts and capacity (docs/forecasts.md) on hand-made series: pure functions, no pipeline.

Each statsforecast test series is short (30-90 days), so the whole file runs in well under a
minute on one core."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import duckdb
import numpy as np
import polars as pl
import pytest

from fleetledger.config import ConfigError, parse_config
from fleetledger.config_forecast import ForecastSettings
from fleetledger.forecasting.build import forecast_by_end
from fleetledger.forecasting.capacity import capacity_frame, runway_day
from fleetledger.forecasting.forecast import forecast_series, horizon_days, quarter_end
from fleetledger.forecasting.freshness import FEED_SCHEMA, series_ends
from fleetledger.forecasting.series import SCHEMA, FleetSeries, densify, peak_gpus_sql

START = date(2026, 1, 5)  # a Monday
LAST = START + timedelta(days=55)
SEASON = np.array([20.0, -10.0, 5.0, 15.0, -25.0, 0.0, -5.0])  # sums to 0


def frame(y: np.ndarray, series: str = "spend", scope: str = "total") -> pl.DataFrame:
    days = [START + timedelta(days=i) for i in range(len(y))]
    return pl.DataFrame(
        {"series": series, "scope": scope, "day": days, "y": y.astype(float)},
        schema={"series": pl.Utf8, "scope": pl.Utf8, "day": pl.Date, "y": pl.Float64},
    )


def run(y: np.ndarray, series: str = "spend", **settings: int) -> pl.DataFrame:
    last = START + timedelta(days=len(y) - 1)
    return forecast_series(frame(y, series), last, ForecastSettings(**settings)).frame


def future(df: pl.DataFrame) -> pl.DataFrame:
    return df.filter(pl.col("horizon") > 0).sort("day")


def test_trend_and_weekly_season_are_recovered() -> None:
    # y = 200 + 3 t + SEASON[t mod 7] + N(0, 2), 8 weeks
    rng = np.random.default_rng(11)
    t = np.arange(56)
    y = 200 + 3.0 * t + SEASON[t % 7] + rng.normal(0, 2, t.size)
    f = future(run(y, "gpu_hours")).head(28)
    assert f["model"][0] in ("AutoETS", "AutoARIMA")
    assert not f["insufficient_history"][0]
    # regress the 4 forecast weeks on a line + day-of-week: slope 3 ± 0.5 per day, each season
    # amplitude within ± 4 of the true one
    k = np.arange(56, 84)
    design = np.column_stack([k, *(k % 7 == d for d in range(7))]).astype(float)
    coef, *_ = np.linalg.lstsq(design, f["yhat"].to_numpy(), rcond=None)
    assert coef[0] == pytest.approx(3.0, abs=0.5)
    season = coef[1:] - coef[1:].mean()
    assert np.abs(season - SEASON).max() < 4.0


def test_noisy_series_reports_its_measured_80_percent_coverage() -> None:
    # y = 100 + N(0, 10), 120 days; 12 windows x 7 held-out days = 84 points, overlapping (the
    # origins are 3 days apart: about 40 distinct days). The band, fixed before looking: the
    # measured coverage of a calibrated 80 % interval on that few distinct days lies in
    # [0.55, 0.95]; the 95 % interval covers at least as much
    rng = np.random.default_rng(5)
    y = 100 + rng.normal(0, 10, 120)
    f = future(run(y, backtest_windows=12))
    assert f["backtest_windows"][0] == 12
    cov80, cov95 = f["backtest_coverage_80"][0], f["backtest_coverage_95"][0]
    assert 0.55 <= cov80 <= 0.95
    assert cov95 >= cov80
    # sMAPE of N(0, 10) noise around 100: E|e| / 100 = 0.8 * 10 / 100 = 0.08
    assert 0.04 < f["backtest_error"][0] < 0.16


@pytest.mark.parametrize(
    ("days", "model", "bounds"),
    [(1, "FlatMean", False), (5, "FlatMean", True), (10, "SeasonalNaive", True)],
)
def test_short_series_get_a_simple_model_and_insufficient_history(
    days: int, model: str, bounds: bool
) -> None:
    y = np.arange(1, days + 1, dtype=float) * 10
    df = run(y)
    f = future(df)
    assert f.height == 90  # trained through mid-January: 90 days reach past the quarter end
    assert set(f["model"]) == {model}
    assert f["insufficient_history"].all()
    assert f["backtest_error"].is_null().all()
    assert f["lo_80"].is_null().all() is (not bounds)
    if days == 1:
        assert f["yhat"][0] == pytest.approx(10.0)  # the mean of one day
        # no day before the only day: no one-step row
        assert df.filter(pl.col("horizon") <= 0).height == 0


@pytest.mark.parametrize("value", [0.0, 42.5])
def test_constant_and_all_zero_series_do_not_crash(value: float) -> None:
    df = run(np.full(30, value))
    f = future(df)
    assert not f["insufficient_history"][0]
    assert f["yhat"].to_numpy() == pytest.approx(value)
    for col in ("lo_80", "hi_99", "cum_lo_80"):
        assert (f[col].to_numpy() >= 0).all()
    assert f["cum_yhat"][29] == pytest.approx(30 * value)
    assert f["backtest_error"][0] == pytest.approx(0.0)


def test_model_choice_differs_between_a_pure_season_and_a_trend_with_noise() -> None:
    t = np.arange(42)
    weekly = 100 + SEASON[t % 7]  # repeats exactly: SeasonalNaive's error is 0
    rng = np.random.default_rng(3)
    trend = 50 + 4.0 * t + rng.normal(0, 3, t.size)  # no season: last week's value lags 28
    a = future(run(weekly))
    b = future(run(trend))
    assert a["model"][0] == "SeasonalNaive"
    assert a["backtest_error"][0] == pytest.approx(0.0, abs=1e-9)
    assert b["model"][0] in ("AutoETS", "AutoARIMA")
    assert b["backtest_error"][0] < 0.05


def test_one_step_rows_are_trained_through_the_day_before() -> None:
    rng = np.random.default_rng(8)
    t = np.arange(35)
    y = 1000 + 10 * t + 5 * SEASON[t % 7] + rng.normal(0, 20, t.size)
    last = START + timedelta(days=34)
    past = run(y, anomaly_lookback_days=7).filter(pl.col("horizon") <= 0).sort("day")
    assert past["day"].to_list() == [last - timedelta(days=6 - i) for i in range(7)]
    assert past["horizon"].to_list() == list(range(-6, 1))
    assert past["trained_through"].to_list() == [d - timedelta(days=1) for d in past["day"]]
    assert past["actual"].to_numpy() == pytest.approx(y[-7:])
    assert (past["lo_99"] <= past["yhat"]).all() and (past["yhat"] <= past["hi_99"]).all()
    # the judged day is not in its own forecast: changing the last day leaves its row alone
    changed = y.copy()
    changed[-1] *= 3
    again = run(changed, anomaly_lookback_days=7).filter(pl.col("horizon") <= 0).sort("day")
    assert again["yhat"].to_numpy() == pytest.approx(past["yhat"].to_numpy())
    assert again["actual"][6] == pytest.approx(3 * y[-1])
    # only spend series carry them
    assert run(y, "gpu_hours").filter(pl.col("horizon") <= 0).height == 0


def test_cumulative_bounds_are_narrower_than_the_sum_of_daily_bounds() -> None:
    rng = np.random.default_rng(21)
    y = 500 + rng.normal(0, 50, 60)
    f = future(run(y)).head(30)
    cum_width = f["cum_hi_80"][29] - f["cum_lo_80"][29]
    daily_widths = float((f["hi_80"] - f["lo_80"]).sum())
    assert 0 < cum_width < daily_widths
    assert f["cum_yhat"][29] == pytest.approx(float(f["yhat"].sum()))
    assert (f["cum_lo_80"] <= f["cum_yhat"]).all() and (f["cum_yhat"] <= f["cum_hi_80"]).all()


def test_horizon_reaches_the_end_of_the_next_days_quarter() -> None:
    assert quarter_end(date(2026, 11, 30)) == date(2026, 12, 31)
    assert quarter_end(date(2026, 1, 1)) == date(2026, 3, 31)
    # trained through 2026-09-30: the quarter of 10-01 ends 12-31, 92 days on
    assert horizon_days(date(2026, 9, 30), ForecastSettings()) == 92
    assert horizon_days(date(2026, 11, 30), ForecastSettings()) == 90
    assert horizon_days(date(2026, 11, 30), ForecastSettings(horizon_days=10)) == 31


def test_runway_is_the_first_day_the_upper_bound_exceeds_the_fleet() -> None:
    days = [date(2026, 12, 1) + timedelta(days=i) for i in range(5)]
    # fleet of 60: 61 on the third day is the first bound over it (60 itself is not over)
    assert runway_day(days, [50, 60, 61, 58, 70], 60) == date(2026, 12, 3)
    assert runway_day(days, [50, 60, 59, 58, None], 60) is None
    actuals = pl.DataFrame(
        {"scope": ["site:a"] * 2, "day": [date(2026, 11, 29), date(2026, 11, 30)], "y": [40, 45]}
    )
    forecasts = pl.DataFrame(
        {
            "scope": ["site:a"] * 3 + ["site:b"] * 3,
            "day": days[:3] * 2,
            "yhat": [46.0, 47, 48, 5, 5, 5],
            "hi_80": [52.0, 58, 66, 8, 9, 9],
            "horizon": [1, 2, 3] * 2,
        }
    )
    cap = capacity_frame(actuals, forecasts, {"site:a": 64, "total": 72})
    a = cap.filter(pl.col("scope") == "site:a").sort("day")
    assert a["peak_gpus_demand"].to_list() == [40, 45, 46, 47, 48]
    assert a["is_forecast"].to_list() == [False, False, True, True, True]
    assert set(a["runway_day"]) == {date(2026, 12, 3)}  # 66 > 64
    b = cap.filter(pl.col("scope") == "site:b")
    # no GPUs known at site b: the first forecast day is already over 0
    assert set(b["fleet_gpus"]) == {0} and set(b["runway_day"]) == {date(2026, 12, 1)}


def test_peak_gpus_is_the_busiest_hour_held_plus_pending() -> None:
    con = duckdb.connect()
    con.execute("create schema if not exists main")
    con.execute(
        "create table main.fct_gpu_hours as select * from (values "
        # site s1, hour 0: 5400 s busy + 1800 s allocated-idle = 7200 GPU-s = 2.0 GPUs held
        "(timestamptz '2026-12-01 00:00:00+00', 's1', 5400.0, 1800.0),"
        # s1, hour 1: 1 GPU held = 1.0; s2, hour 1: 4 GPUs held = 4.0
        "(timestamptz '2026-12-01 01:00:00+00', 's1', 3600.0, 0.0),"
        "(timestamptz '2026-12-01 01:00:00+00', 's2', 14400.0, 0.0)"
        ") as t(hour, site, busy_seconds, allocated_idle_seconds)"
    )
    con.execute(
        "create table main.dim_nodes as select * from (values "
        "('n1', 'c1', 's1'), ('n2', 'c2', 's2'), ('n3', 'c2', 's3')) as t(host, cluster, site)"
    )
    con.execute(
        "create table main.fct_runs as select * from (values "
        # pending on c1 (site s1) from 00:30, starts 01:30: pending at the end of hour 0 only
        "('c1', timestamptz '2026-12-01 00:30:00+00', timestamptz '2026-12-01 01:30:00+00', "
        " null::timestamptz, 8, 8.0),"
        # pending on c2 (two sites: total only) all day
        "('c2', timestamptz '2026-11-30 23:00:00+00', null, null, 16, 16.0),"
        # started at once: never pending
        "('c1', timestamptz '2026-12-01 00:10:00+00', timestamptz '2026-12-01 00:10:00+00', "
        " null, 4, 4.0)"
        ") as t(cluster, submitted_at, started_at, ended_at, gpus, gpu_equivalents)"
    )
    rows = dict(
        (scope, y) for _s, scope, _d, y in con.execute(peak_gpus_sql(with_runs=True)).fetchall()
    )
    # s1: hour 0 = 2.0 held + 8 pending = 10.0, hour 1 = 1.0  -> 10.0
    # s2: hour 1 = 4.0 (the c2 run's cluster spans two sites: not here)  -> 4.0
    # total: hour 0 = 2.0 + 8 + 16 = 26.0, hour 1 = 5.0 + 16 = 21.0  -> 26.0
    assert rows == {"site:s1": 10.0, "site:s2": 4.0, "total": 26.0}


def test_forecast_config_is_validated(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = parse_config({"forecast": {"horizon_days": 30}}, tmp_path / "fleetledger.yml")
    assert cfg.forecast.horizon_days == 30 and cfg.forecast.anomaly_lookback_days == 7
    with pytest.raises(ConfigError, match="forecast.min_history_days"):
        parse_config({"forecast": {"min_history_days": 10}}, tmp_path / "fleetledger.yml")
    with pytest.raises(ConfigError, match="forecast.horizon"):
        parse_config({"forecast": {"horizon": 30}}, tmp_path / "fleetledger.yml")


# --------------------------------------------------------------------------------------------
# data freshness: where each series ends, and the days missing inside it (freshness.py)

D0 = date(2026, 10, 1)


def _feed(feed: str, series: list[str], days: list[date]) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "feed": [feed] * len(series) * len(days),
            "series": [s for s in series for _ in days],
            "day": days * len(series),
        },
        schema=FEED_SCHEMA,
    )


def _span(first: int, last: int, skip: tuple[int, ...] = ()) -> list[date]:
    return [D0 + timedelta(days=i) for i in range(first, last + 1) if i not in skip]


def test_series_end_at_the_last_day_every_feed_delivered_and_gaps_are_named() -> None:
    # raw rows as the marts hold them, Oct 1..10: total spend 100 a day but none on Oct 5 (the
    # CUR missed it) and none on Oct 7 (nothing ran: every feed delivered Oct 7, a real 0); the
    # CUR has not delivered Oct 10 yet, so the spend rows of Oct 10 hold GCP only (40);
    # gpu_hours 50 a day through Oct 10
    spend_y = {i: 100.0 for i in range(10) if i not in (4, 6)} | {9: 40.0}
    raw = pl.concat(
        [
            pl.DataFrame(
                {"series": "spend", "scope": "total",
                 "day": [D0 + timedelta(days=i) for i in spend_y], "y": list(spend_y.values())},
                schema=SCHEMA,
            ),
            pl.DataFrame(
                {"series": "gpu_hours", "scope": "total", "day": _span(0, 9), "y": [50.0] * 10},
                schema=SCHEMA,
            ),
        ]
    )  # fmt: skip
    feeds = pl.concat(
        [
            _feed("accounted", ["spend", "gpu_hours", "peak_gpus"], _span(0, 9)),
            _feed("billing:aws-cur", ["spend"], _span(0, 8, skip=(4,))),  # Oct 1-9, not Oct 5
            _feed("billing:gcp", ["spend"], _span(0, 9)),
            _feed("telemetry:dc1", ["gpu_hours", "peak_gpus"], _span(0, 9)),
        ]
    )
    last = D0 + timedelta(days=9)
    found = series_ends(raw, feeds, last, max_lag_days=3)
    # spend ends Oct 9 (the CUR's last day), gpu_hours on the last accounted day Oct 10
    assert found.ends == {"spend": date(2026, 10, 9), "gpu_hours": date(2026, 10, 10)}
    notes = {n.check: n for n in found.notes}
    assert set(notes) == {"forecast_data_through:spend", "forecast_gap:spend"}
    through = notes["forecast_data_through:spend"]
    assert through.severity == "info" and through.count == 1
    assert "billing:aws-cur through 2026-10-09" in through.message
    # the one gap: Oct 5, which the CUR skipped (Oct 7 is no gap: every feed delivered it)
    gap = notes["forecast_gap:spend"]
    assert (gap.severity, gap.count) == ("warning", 1)
    assert "billing:aws-cur: 2026-10-05" in gap.message and "2026-10-07" not in gap.message
    assert "total" in gap.message
    # the dense series: spend Oct 1..9 (Oct 5 and Oct 7 filled 0, Oct 10's partial day out),
    # gpu_hours Oct 1..10
    dense = densify(raw, last, found.ends)
    spend = dense.filter(pl.col("series") == "spend")
    assert spend["day"].to_list() == _span(0, 8)
    assert spend["y"].to_list() == [100.0] * 4 + [0.0, 100.0, 0.0, 100.0, 100.0]
    assert dense.filter(pl.col("series") == "gpu_hours")["day"].max() == last
    # each group is forecast trained through its own end: spend through Oct 9 (its first
    # forecast day Oct 10, not Oct 11), gpu_hours through Oct 10
    fleet = FleetSeries(dense, last, "USD", set(), found.ends, found.notes)
    out = forecast_by_end(fleet, ForecastSettings(anomaly_lookback_days=0))
    trained = dict(out.frame.group_by("series").agg(pl.col("trained_through").max()).iter_rows())
    assert trained == {"spend": date(2026, 10, 9), "gpu_hours": date(2026, 10, 10)}
    first_day = out.frame.filter(pl.col("series") == "spend")["day"].min()
    assert first_day == date(2026, 10, 10)
    # the freshness notes reach the run, each check once (two forecast passes)
    checks = [n.check for n in out.notes]
    assert len(checks) == len(set(checks))
    assert {"forecast_data_through:spend", "forecast_gap:spend"} <= set(checks)


def test_a_stopped_feed_is_not_waited_for_and_a_missing_accounted_day_is_a_gap() -> None:
    raw = pl.DataFrame(
        {"series": "spend", "scope": "total", "day": _span(0, 9), "y": [10.0] * 10},
        schema=SCHEMA,
    )
    feeds = pl.concat(
        [
            # Oct 6 was never accounted (no run asked for it)
            _feed("accounted", ["spend"], _span(0, 9, skip=(5,))),
            _feed("billing:live", ["spend"], _span(0, 9)),
            # delivered Oct 1-3 only: 7 days behind Oct 10, over max_feed_lag_days 3
            _feed("billing:old", ["spend"], _span(0, 2)),
        ]
    )
    found = series_ends(raw, feeds, D0 + timedelta(days=9), max_lag_days=3)
    assert found.ends == {"spend": date(2026, 10, 10)}
    notes = {n.check: n for n in found.notes}
    assert set(notes) == {"forecast_feed_stale:billing:old", "forecast_gap:spend"}
    assert "nothing after 2026-10-03 (7 days" in notes["forecast_feed_stale:billing:old"].message
    # gap days: Oct 4..10 of billing:old (7) and Oct 6 of accounted (already among them): 7
    gap = notes["forecast_gap:spend"]
    assert gap.count == 7
    assert "accounted: 2026-10-06" in gap.message
    assert "billing:old: 2026-10-04, 2026-10-05" in gap.message
    # with a lag allowance of 7 days the old feed is waited for: spend ends Oct 3
    waited = series_ends(raw, feeds, D0 + timedelta(days=9), max_lag_days=7)
    assert waited.ends == {"spend": date(2026, 10, 3)}


def test_a_model_is_chosen_on_the_weeks_sunday_and_kept_for_the_week(tmp_path: Path) -> None:
    # choices.py: the back-test reads the series through the last Sunday on or before the day
    # it is trained through, so every run of a week chooses on the same days; the first run's
    # choice is kept and the week's later runs reuse it, with the very numbers a run without
    # anything kept computes
    from fleetledger.forecasting.choices import ChoiceCache, choice_history, selection_day

    sunday = date(2026, 3, 1)
    assert sunday.weekday() == 6
    assert selection_day(sunday) == sunday
    for k in range(1, 7):  # Monday .. Saturday
        assert selection_day(sunday + timedelta(days=k)) == sunday
    assert selection_day(sunday - timedelta(days=1)) == sunday - timedelta(days=7)
    # through the selection day when that part can be back-tested, else the whole series
    y = np.arange(30, dtype=float)
    first = sunday - timedelta(days=24)  # 25 days through Sunday, 30 through Friday
    assert choice_history(y, first, sunday + timedelta(days=5), 21).size == 25
    assert choice_history(y, first, sunday + timedelta(days=5), 26).size == 30

    rng = np.random.default_rng(21)
    t = np.arange(70)
    full = 300 + 2.0 * t + SEASON[t % 7] * 3 + rng.normal(0, 6, t.size)
    path = tmp_path / "choices.json"
    # START is a Monday: day index 62 is a Sunday (the first run chooses), 63..67 Monday to
    # Friday (they reuse its choice)
    for n in range(63, 69):
        cache = ChoiceCache.load(path)
        kept = future(
            forecast_series(
                frame(full[:n]), START + timedelta(days=n - 1), ForecastSettings(), cache=cache
            ).frame
        )
        cache.save()
        fresh = future(run(full[:n]))
        assert (cache.hits, cache.misses) == ((0, 1) if n == 63 else (1, 0)), n
        for col in ("model", "backtest_error", "backtest_coverage_80", "backtest_windows"):
            assert kept[col][0] == fresh[col][0], (n, col)
        assert kept["yhat"].to_numpy() == pytest.approx(fresh["yhat"].to_numpy())
        assert kept["history_days"][0] == n
    # a restated day before the selection day changes what the choice reads: back-tested again
    restated = full.copy()
    restated[10] += 50
    cache = ChoiceCache.load(path)
    forecast_series(
        frame(restated[:66]), START + timedelta(days=65), ForecastSettings(), cache=cache
    )
    assert (cache.hits, cache.misses) == (0, 1)


def test_a_damaged_kept_choice_is_back_tested_again(tmp_path: Path) -> None:
    # a kept choice that is no choice of a known model (a damaged or hand-edited file) is a
    # miss: the series is back-tested, with the numbers of a run that kept nothing
    import json

    from fleetledger.forecasting.choices import ChoiceCache

    rng = np.random.default_rng(4)
    y = 100 + rng.normal(0, 10, 42)
    path = tmp_path / "choices.json"
    cache = ChoiceCache.load(path)
    forecast_series(frame(y), START + timedelta(days=41), ForecastSettings(), cache=cache)
    cache.save()
    saved = json.loads(path.read_text())
    (key,) = saved["choices"]
    fresh = future(run(y))
    for bad in ({"model": "Bogus", "insufficient_history": False}, {"model": "AutoETS"}, "x"):
        saved["choices"][key] = bad
        path.write_text(json.dumps(saved))
        again = ChoiceCache.load(path)
        kept = future(
            forecast_series(
                frame(y), START + timedelta(days=41), ForecastSettings(), cache=again
            ).frame
        )
        assert (again.hits, again.misses) == (0, 1), bad
        assert kept["model"][0] == fresh["model"][0]
        assert kept["backtest_error"][0] == fresh["backtest_error"][0]
