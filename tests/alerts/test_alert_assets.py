"""The alerts asset step waits for fct_forecast only where the graph has it."""

from __future__ import annotations

from dagster import AssetKey

from orchestration.alert_assets import ALERT_KEYS, FORECAST_KEY, alert_assets


def _deps(graph: set[AssetKey]) -> set[AssetKey]:
    (step,) = alert_assets(graph)
    assert set(step.keys) == set(ALERT_KEYS)
    return {dep for key in step.keys for dep in step.asset_deps[key]}


def test_forecast_dependency_is_conditional() -> None:
    marts = {AssetKey("fct_daily_spend"), AssetKey("fct_gpu_hours"), AssetKey("dim_teams")}
    assert _deps(marts) == {AssetKey("fct_daily_spend"), AssetKey("fct_gpu_hours")}
    assert FORECAST_KEY in _deps(marts | {FORECAST_KEY})
