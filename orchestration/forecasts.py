"""The forecasts as Dagster assets: `fct_forecast` and `fct_capacity` (group `forecasts`),
built into the build warehouse after the dbt marts and before publish (publish waits for them).
A thin wrapper over `fleetledger.forecasting.build.build_forecasts`."""

from collections.abc import Sequence

from dagster import (
    AssetExecutionContext,
    AssetKey,
    AssetsDefinition,
    AssetSpec,
    DailyPartitionsDefinition,
    MaterializeResult,
    multi_asset,
)

from fleetledger.config import config_path
from fleetledger.forecasting.build import FORECAST_MARTS, build_forecasts
from fleetledger.run_lock import home_lock
from orchestration.partitions import DAILY, SINGLE_RUN
from orchestration.resources import FleetResource

FORECAST_KEYS = [AssetKey(name) for name in FORECAST_MARTS]
_DESCRIPTIONS = {
    "fct_forecast": "Daily spend, held GPU-hours and peak GPU demand per scope, forecast with "
    "80/95/99 % intervals by the model each series' back-test chose (docs/forecasts.md).",
    "fct_capacity": "Peak concurrent GPU demand per site and in total against the fleet's GPUs, "
    "and the runway: the first day its upper 80 % bound exceeds them.",
}


def forecast_assets(
    upstream: Sequence[AssetKey], partitions: DailyPartitionsDefinition = DAILY
) -> list[AssetsDefinition]:
    @multi_asset(
        specs=[
            AssetSpec(
                key,
                deps=list(upstream),
                group_name="forecasts",
                kinds={"python", "duckdb"},
                description=_DESCRIPTIONS[key.path[-1]],
            )
            for key in FORECAST_KEYS
        ],
        name="forecasts",
        partitions_def=partitions,
        backfill_policy=SINGLE_RUN,
    )
    def forecasts(context: AssetExecutionContext, fleet: FleetResource):  # type: ignore[no-untyped-def]
        home = fleet.home_path
        cfg = fleet.load_config() if config_path(home).exists() else None
        # re-entrant: a `fleetledger run` already holds the lock
        with home_lock(home):
            result = build_forecasts(home, cfg, context.run.run_id)
        for note in result.notes:
            if note.severity != "info":
                context.log.warning(f"forecasts: {note.message}")
        context.log.info(
            f"forecast {result.series} series in {result.seconds:.1f} s: "
            + ", ".join(f"{t} {n} rows" for t, n in result.rows.items())
        )
        for key in FORECAST_KEYS:
            name = key.path[-1]
            yield MaterializeResult(
                asset_key=key,
                metadata={
                    "rows": result.rows[name],
                    "series": result.series,
                    "seconds": round(result.seconds, 2),
                },
            )

    return [forecasts]
