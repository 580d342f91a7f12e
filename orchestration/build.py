"""Build the fleetledger `Definitions` for a FLEETLEDGER_HOME.

The config (`$FLEETLEDGER_HOME/fleetledger.yml`) decides which source assets exist. Without a
config file the Definitions still load, with the dbt and publish assets only; an invalid config
raises `ConfigError` naming the key.
"""

from __future__ import annotations

import logging
from pathlib import Path

from dagster import AssetKey, AssetsDefinition, Definitions

from fleetledger.config import Config, config_path, fleetledger_home, load_config
from orchestration.alert_assets import ALERT_KEYS, alert_assets
from orchestration.checks import source_checks
from orchestration.config_assets import config_assets
from orchestration.dbt import build_dbt_assets, dbt_resource
from orchestration.forecasts import FORECAST_KEYS, forecast_assets
from orchestration.ingest_assets import build_ingest_assets
from orchestration.partitions import partitions_for
from orchestration.publish import publish_assets
from orchestration.resources import FleetResource
from orchestration.schedules import DAILY_JOB_NAME, daily_job, daily_schedule
from orchestration.sensors import billing_sensors

log = logging.getLogger(__name__)


def load_optional_config(home: Path) -> Config | None:
    path = config_path(home)
    if not path.exists():
        log.warning("%s does not exist: loading the dbt and publish assets only", path)
        return None
    return load_config(path)


def build_definitions(home: Path | None = None) -> Definitions:
    home = (home or fleetledger_home()).resolve()
    cfg = load_optional_config(home)

    # one ingest asset per configured source, with its checks, from the kind registry
    assets: list[AssetsDefinition] = [*build_ingest_assets(cfg), *source_checks(cfg)]
    configured = config_assets(cfg)
    assets += configured
    dbt = build_dbt_assets(cfg, has_config_asset=bool(configured))
    upstream: list[AssetKey] = []
    if dbt is not None:
        assets.append(dbt)
        # publish waits for the dbt models nothing else in dbt reads (the marts)
        inner = {dep for key in dbt.keys for dep in dbt.asset_deps.get(key, set())}
        upstream = sorted((k for k in dbt.keys if k not in inner), key=lambda k: k.path)
    else:
        log.warning("dbt_project/dbt_project.yml not found: no dbt assets")
    if dbt is not None:
        # the forecasts read the marts; publish waits for them too
        assets += forecast_assets(upstream, partitions_for(cfg))
        upstream = [*upstream, *FORECAST_KEYS]
    if cfg is not None and dbt is not None:
        # budgets and alerts after the dbt build (and fct_forecast where the graph has it);
        # publish waits for them
        graph = {key for a in assets for key in a.keys}
        assets += alert_assets(graph, partitions_for(cfg))
        upstream = sorted({*upstream, *ALERT_KEYS}, key=lambda k: k.path)
    assets += publish_assets(upstream, partitions_for(cfg))

    resources: dict[str, object] = {"fleet": FleetResource(home=str(home))}
    dbt_cli = dbt_resource(cfg)
    if dbt_cli is not None:
        resources["dbt"] = dbt_cli

    job = daily_job()
    return Definitions(
        assets=assets,
        jobs=[job],
        schedules=[daily_schedule(job)],
        sensors=billing_sensors(cfg, assets, DAILY_JOB_NAME),
        resources=resources,
    )
