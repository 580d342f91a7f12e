"""The `warehouse:` config schema (docs/config.md, docs/scaling.md): which engine dbt builds the
warehouse on (its dbt target in dbt_project/profiles.yml) and, for Spark, the session's settings
and where the landing zone and the tables are. What the profile reads travels as environment
variables of the dbt process (`dbt_env`), so the dbt vars, and with them dbt's partial parse,
stay the same from run to run."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

Engine = Literal["duckdb", "spark"]


class SparkSettings(BaseModel):
    """The local PySpark session dbt-spark starts (`method: session`)."""

    model_config = ConfigDict(extra="forbid")

    # spark.master: local[N] runs in dbt's process; a cluster uses another profile (scaling.md)
    master: str = Field(default="local[2]", min_length=1)
    driver_memory: str = Field(default="2g", pattern=r"^[0-9]+[kmgt]$")
    shuffle_partitions: int = Field(default=4, ge=1)
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

    @property
    def dbt_target(self) -> str:
        """The dbt target of the build (dbt_project/profiles.yml)."""
        return self.target or self.engine

    def spark_warehouse_dir(self, home: Path) -> str:
        return self.spark.warehouse_dir or str(home / "build" / "spark" / "warehouse")

    def dbt_env(self, home: Path) -> dict[str, str]:
        """The environment the dbt profile's target reads (nothing for DuckDB)."""
        if self.engine != "spark":
            return {}
        return {
            "FLEETLEDGER_SPARK_MASTER": self.spark.master,
            "FLEETLEDGER_SPARK_MEMORY": self.spark.driver_memory,
            "FLEETLEDGER_SPARK_SHUFFLE_PARTITIONS": str(self.spark.shuffle_partitions),
            "FLEETLEDGER_SPARK_WAREHOUSE_DIR": self.spark_warehouse_dir(home),
            "FLEETLEDGER_LANDING_LOCATION": self.spark.landing_location or str(home / "raw"),
        }
