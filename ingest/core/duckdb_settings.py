"""The DuckDB settings of the warehouse (`warehouse:` in fleetledger.yml, docs/config.md) as
environment variables, and DuckDB connections opened with them.

The pipeline sets the variables for the duration of its steps (the dbt build's child process
and the ingest steps inherit them; fleetledger/config_warehouse.py); dbt reads them in
`dbt_project/profiles.yml`, and every DuckDB connection ingest opens for its data goes through
`connect`, which applies them. Unset: DuckDB's own defaults (80 % of the memory, one thread a
core).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import duckdb

#: environment variable → DuckDB setting
MEMORY_LIMIT_ENV = "FLEETLEDGER_DUCKDB_MEMORY_LIMIT"
THREADS_ENV = "FLEETLEDGER_DUCKDB_THREADS"
SETTINGS_ENV = {MEMORY_LIMIT_ENV: "memory_limit", THREADS_ENV: "threads"}


def env_settings(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The DuckDB settings the environment sets (`{"memory_limit": "4GB", "threads": "2"}`)."""
    env = os.environ if environ is None else environ
    return {setting: env[var] for var, setting in SETTINGS_ENV.items() if env.get(var)}


def connect(database: str = ":memory:", *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the warehouse's memory limit and threads applied."""
    config = env_settings()
    return duckdb.connect(database, read_only=read_only, config=config)
