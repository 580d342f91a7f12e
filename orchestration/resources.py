"""The resource that tells every asset which FLEETLEDGER_HOME it works in."""

from __future__ import annotations

from pathlib import Path

from dagster import ConfigurableResource

from fleetledger.config import Config, config_path, load_config


class FleetResource(ConfigurableResource):
    """`home` is the FLEETLEDGER_HOME: config, raw landing zone, build and published warehouse."""

    home: str

    @property
    def home_path(self) -> Path:
        return Path(self.home)

    def load_config(self) -> Config:
        return load_config(config_path(self.home_path))
