"""The config's `warehouse:` (docs/config.md, docs/scaling.md): the engine and dbt target the
pipeline builds on, the Spark session's environment, and the export of a Spark build's Parquet
tables to the DuckDB file the forecast, alert and publish steps read. No Spark here: the export
reads Parquet laid out as a Spark warehouse writes it (tests/spark/ builds on Spark itself)."""

from __future__ import annotations

import shutil
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fleetledger.config import ConfigError, parse_config
from fleetledger.publish import PublishError, build_path, export_spark_warehouse


def _cfg(tmp_path: Path, warehouse: dict | None):
    data = {} if warehouse is None else {"warehouse": warehouse}
    return parse_config(data, tmp_path / "fleetledger.yml")


def test_duckdb_is_the_default_engine(tmp_path: Path) -> None:
    wh = _cfg(tmp_path, None).warehouse
    assert (wh.engine, wh.dbt_target) == ("duckdb", "duckdb")
    assert wh.dbt_env(tmp_path) == {}


def test_spark_engine_selects_its_target_and_session(tmp_path: Path) -> None:
    wh = _cfg(tmp_path, {"engine": "spark", "spark": {"master": "local[4]"}}).warehouse
    assert wh.dbt_target == "spark"
    assert wh.dbt_env(tmp_path) == {
        "FLEETLEDGER_SPARK_MASTER": "local[4]",
        "FLEETLEDGER_SPARK_MEMORY": "2g",
        "FLEETLEDGER_SPARK_SHUFFLE_PARTITIONS": "4",
        "FLEETLEDGER_SPARK_JAVA_OPTIONS": "",
        "FLEETLEDGER_SPARK_WAREHOUSE_DIR": str(tmp_path / "build" / "spark" / "warehouse"),
        "FLEETLEDGER_LANDING_LOCATION": str(tmp_path / "raw"),
    }
    # a cluster's own output of profiles.yml, and the landing zone on S3
    wh = _cfg(
        tmp_path,
        {
            "engine": "spark",
            "target": "spark_thrift",
            "spark": {
                "landing_location": "s3a://fleet/raw",
                "warehouse_dir": "/lake/wh",
                "java_options": "-XX:TieredStopAtLevel=1",
            },
        },
    ).warehouse
    assert wh.dbt_target == "spark_thrift"
    env = wh.dbt_env(tmp_path)
    assert env["FLEETLEDGER_SPARK_JAVA_OPTIONS"] == "-XX:TieredStopAtLevel=1"
    assert env["FLEETLEDGER_LANDING_LOCATION"] == "s3a://fleet/raw"
    assert env["FLEETLEDGER_SPARK_WAREHOUSE_DIR"] == "/lake/wh"


@pytest.mark.parametrize(
    "warehouse,message",
    [
        ({"engine": "postgres"}, "warehouse.engine: Input should be 'duckdb' or 'spark'"),
        ({"engine": "spark", "cores": 4}, "warehouse.cores: Extra inputs are not permitted"),
        ({"spark": {"driver_memory": "lots"}}, "warehouse.spark.driver_memory: String should"),
    ],
)
def test_bad_warehouse_settings_name_the_key(tmp_path: Path, warehouse: dict, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        _cfg(tmp_path, warehouse)
    assert message in str(err.value)


def test_the_dbt_resource_builds_on_the_configured_target(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import orchestration.dbt as odbt

    # the project without a manifest parse (dbt_project() would run `dbt parse` when stale)
    monkeypatch.setattr(odbt, "dbt_project", lambda: odbt._dbt_project(odbt.DBT_PROJECT_DIR))
    spark = odbt.dbt_resource(_cfg(tmp_path, {"engine": "spark"}))
    duck = odbt.dbt_resource(None)
    assert spark is not None and duck is not None
    assert (spark.target, duck.target) == ("spark", "duckdb")


def _spark_table(root: Path, schema: str, name: str, parts: list[pa.Table]) -> None:
    """A table as Spark writes it: part files and a `_SUCCESS` marker in `<schema>.db/<name>/`."""
    folder = root / f"{schema}.db" / name
    folder.mkdir(parents=True)
    for i, part in enumerate(parts):
        pq.write_table(part, folder / f"part-{i:05d}-x-c000.snappy.parquet")
    (folder / "_SUCCESS").write_bytes(b"")


def test_a_spark_build_is_exported_to_the_build_warehouse(tmp_path: Path) -> None:
    wh = tmp_path / "spark-warehouse"
    hours = pa.table({"host": ["a", "b"], "gpu_hours": [1.5, 2.25]})
    more = pa.table({"host": ["c"], "gpu_hours": [4.0]})
    _spark_table(wh, "main", "fct_gpu_hours", [hours, more])
    _spark_table(wh, "intermediate", "int_days", [pa.table({"day_epoch": [0.0, 86400.0]})])
    # staging views hold no data: never exported; a stale build file is replaced
    (wh / "staging.db").mkdir()
    build_path(tmp_path).parent.mkdir(parents=True)
    duckdb.connect(str(build_path(tmp_path))).execute("create table old as select 1").close()

    counts = export_spark_warehouse(tmp_path, wh)

    assert counts == {"main.fct_gpu_hours": 3, "intermediate.int_days": 2}
    con = duckdb.connect(str(build_path(tmp_path)), read_only=True)
    try:
        # 1.5 + 2.25 + 4.0 over both part files
        assert con.execute("select sum(gpu_hours) from main.fct_gpu_hours").fetchone() == (7.75,)
        tables = con.execute(
            "select table_schema || '.' || table_name from information_schema.tables order by 1"
        ).fetchall()
        assert tables == [("intermediate.int_days",), ("main.fct_gpu_hours",)]
    finally:
        con.close()
    assert not list(build_path(tmp_path).parent.glob(".*export"))


def test_a_day_model_without_rows_is_exported_with_its_columns(tmp_path: Path) -> None:
    """A partitioned Spark table with no row (no host outside the inventory) has a folder and
    no Parquet file; the empty schema file its build wrote under `_schemas/` gives the DuckDB
    table its columns and types. A table with neither fails, naming the folder."""
    wh = tmp_path / "spark-warehouse"
    _spark_table(wh, "main", "fct_gpu_hours", [pa.table({"host": ["a"], "gpu_hours": [1.5]})])
    empty = wh / "intermediate.db" / "int_dcgm_outside_host_days"
    empty.mkdir(parents=True)
    (empty / "_SUCCESS").write_bytes(b"")
    schema = pa.schema([("reported_host", pa.string()), ("samples", pa.int64())])
    schema_dir = wh / "intermediate.db" / "_schemas" / "int_dcgm_outside_host_days"
    schema_dir.mkdir(parents=True)
    pq.write_table(schema.empty_table(), schema_dir / "part-00000-x-c000.snappy.parquet")

    counts = export_spark_warehouse(tmp_path, wh)

    assert counts == {"main.fct_gpu_hours": 1, "intermediate.int_dcgm_outside_host_days": 0}
    con = duckdb.connect(str(build_path(tmp_path)), read_only=True)
    try:
        columns = con.execute(
            "select column_name, data_type from information_schema.columns "
            "where table_name = 'int_dcgm_outside_host_days' order by ordinal_position"
        ).fetchall()
        assert columns == [("reported_host", "VARCHAR"), ("samples", "BIGINT")]
    finally:
        con.close()

    shutil.rmtree(wh / "intermediate.db" / "_schemas")
    with pytest.raises(PublishError, match="int_dcgm_outside_host_days: a Spark table without"):
        export_spark_warehouse(tmp_path, wh)


def test_an_export_without_marts_fails_and_keeps_the_build(tmp_path: Path) -> None:
    (tmp_path / "wh" / "main.db").mkdir(parents=True)
    with pytest.raises(PublishError, match="no Spark mart tables to export"):
        export_spark_warehouse(tmp_path, tmp_path / "wh")
    assert not build_path(tmp_path).exists()
