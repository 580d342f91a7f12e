"""`warehouse:` in fleetledger.yml: the engine dbt builds on and its settings.

    warehouse:
      engine: duckdb        # duckdb (default) | spark (docs/scaling.md)
      target: null          # the dbt_project/profiles.yml output; default: the engine's own
      memory_limit: 4GB     # DuckDB's memory_limit: a size (KB, MB, GB, TB, KiB ... TiB) or a
                            # share of the machine's memory ("50%"); default 80%
      threads: 2            # DuckDB's worker threads; default: one a CPU
      day_batch_rows: 16000000  # a full build's sample-grain models: landed DCGM rows a batch
      spark: {master: local[2], driver_memory: 2g, ...}   # the local PySpark session

They reach the dbt build (dbt_project/profiles.yml reads them from the environment the build
step sets: `env` for DuckDB, `dbt_env` for Spark) and every DuckDB connection ingest opens
(ingest/core/duckdb_settings.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from fleetledger.env_vars import environment
from ingest.core.duckdb_settings import MEMORY_LIMIT_ENV, THREADS_ENV

DEFAULT_MEMORY_LIMIT = "80%"
#: how many long DCGM rows a batch of a full build's sample-grain models covers at most (a day
#: of 1,024 GPUs at 30 s with five fields is 14.7 M): days are grouped up to it, a larger day is a
#: batch of its own (fleetledger/incremental.py, dbt_project/macros/day_batches.sql)
DEFAULT_DAY_BATCH_ROWS = 16_000_000
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


Engine = Literal["duckdb", "spark"]


class SparkSettings(BaseModel):
    """The local PySpark session dbt-spark starts (`method: session`)."""

    model_config = ConfigDict(extra="forbid")

    # spark.master: local[N] runs in dbt's process; a cluster uses another profile (scaling.md)
    master: str = Field(default="local[2]", min_length=1)
    driver_memory: str = Field(default="2g", pattern=r"^[0-9]+[kmgt]$")
    shuffle_partitions: int = Field(default=4, ge=1)
    # more JVM options of the session's driver (spark.driver.extraJavaOptions), e.g. the JIT
    # and metastore settings that make a small test build faster (docs/scaling.md)
    java_options: str = ""
    # the landing zone the external tables read (an s3a:// URI on a cluster); unset:
    # $FLEETLEDGER_HOME/raw, where ingest writes it
    landing_location: str | None = None
    # where the Parquet tables are written; unset: $FLEETLEDGER_HOME/build/spark/warehouse
    warehouse_dir: str | None = None


class WarehouseSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    engine: Engine = "duckdb"
    # the output of dbt_project/profiles.yml to build on; unset: the engine's own (`duckdb`,
    # `spark`: a local session). A cluster's output (thrift, Databricks) is added there and
    # named here (docs/scaling.md)
    target: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_-]+$")
    spark: SparkSettings = Field(default_factory=SparkSettings)
    memory_limit: str = DEFAULT_MEMORY_LIMIT
    # unset: one thread a CPU of the machine the run is on
    threads: int | None = Field(default=None, ge=1)
    # a DuckDB full build runs the sample-grain day models in batches of consecutive days of at
    # most this many landed DCGM rows (a larger day: a batch of its own); the rows are the same
    # whatever the batches, the memory of a batch follows its rows (docs/performance.md)
    day_batch_rows: int = Field(default=DEFAULT_DAY_BATCH_ROWS, ge=1)

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _memory(cls, value: object) -> str:
        text = str(value)
        size = _SIZE.match(text)
        if size and float(size.group(1)) > 0:
            return f"{size.group(1)}{size.group(2).upper().replace('IB', 'iB')}"
        share = _SHARE.match(text)
        if share and 0 < float(share.group(1)) <= 100:
            return f"{share.group(1)}%"
        raise ValueError(
            f"{text!r} is not a memory size: write a number and a unit (e.g. 4GB, 512MiB) or a "
            "share of the machine's memory (1%-100%, e.g. 50%)"
        )

    @property
    def dbt_target(self) -> str:
        """The dbt target of the build (dbt_project/profiles.yml)."""
        return self.target or self.engine

    def spark_warehouse_dir(self, home: Path) -> str:
        return self.spark.warehouse_dir or str(home / "build" / "spark" / "warehouse")

    def dbt_env(self, home: Path) -> dict[str, str]:
        """The environment the Spark target of the profile reads (nothing for DuckDB)."""
        if self.engine != "spark":
            return {}
        return {
            "FLEETLEDGER_SPARK_MASTER": self.spark.master,
            "FLEETLEDGER_SPARK_MEMORY": self.spark.driver_memory,
            "FLEETLEDGER_SPARK_SHUFFLE_PARTITIONS": str(self.spark.shuffle_partitions),
            "FLEETLEDGER_SPARK_JAVA_OPTIONS": self.spark.java_options,
            "FLEETLEDGER_SPARK_WAREHOUSE_DIR": self.spark_warehouse_dir(home),
            "FLEETLEDGER_LANDING_LOCATION": self.spark.landing_location or str(home / "raw"),
        }

    def resolved_threads(self) -> int:
        return self.threads or os.cpu_count() or 1

    def env(self) -> dict[str, str]:
        """The environment variables that carry the settings to dbt and to ingest."""
        return {MEMORY_LIMIT_ENV: self.memory_limit, THREADS_ENV: str(self.resolved_threads())}


@contextmanager
def warehouse_env(settings: WarehouseSettings) -> Iterator[None]:
    """Set the settings' environment variables for the duration, then restore the old ones."""
    with environment(settings.env()):
        yield
