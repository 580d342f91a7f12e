"""The same dbt project on Spark (docs/scaling.md): one small generated fleet run through the whole
pipeline twice, once per engine (config `warehouse.engine`), then every dbt data test and unit
test checked on Spark and every mart compared with the DuckDB build's, mart by mart, within a
float tolerance (Spark and DuckDB add doubles in different orders, and Spark keeps exact
decimals where DuckDB computes doubles).

The fleet: the generator's MIG shape (2 AWS, 1 GKE + a MIG/time-sliced GKE node, 2 on-prem + an
on-prem MIG node), 2 days, a DCGM scrape every 300 s: every model has rows on both engines."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
import yaml

from fleetledger.config import load_config
from fleetledger.generator import generate
from fleetledger.pipeline import run_pipeline

pytestmark = [pytest.mark.spark, pytest.mark.warehouse]

REPO = Path(__file__).resolve().parents[2]
PROJECT = REPO / "dbt_project"
START = date(2026, 10, 2)
FLEET = {
    "days": 2,
    "seed": 2,
    "aws_nodes": 2,
    "gcp_nodes": 1,
    "onprem_nodes": 2,
    "mig": True,
    "mig_gres": True,
}
#: relative tolerance of a number (doubles summed in another order, decimals vs doubles)
REL_TOL = 1e-9
#: columns that differ between two runs by design (the run that built the row)
RUN_COLUMNS = {"run_id", "run_at"}
MARTS = sorted(p.stem for p in (PROJECT / "models" / "marts").glob("*.sql"))


#: the Spark session of the test build (config `warehouse.spark`, docs/scaling.md): one shuffle
#: partition (a few thousand rows a model), the JVM's quick JIT tier only and a serial GC (short
#: jobs on 2 cores) with room for its compiled code (with the quick tier only the JVM reserves
#: 48 MB, which one more model filled: "Out of space in CodeCache", and the driver died), and a
#: Derby metastore that does not sync its log to disk (a throwaway
#: catalog; every model's create/drop is a metastore transaction)
SPARK_SESSION = {
    "shuffle_partitions": 1,
    "java_options": (
        "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -XX:ReservedCodeCacheSize=256m "
        "-Dderby.system.durability=test"
    ),
}


@pytest.fixture(scope="module")
def homes(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The fleet's home after a DuckDB pipeline run and a copy after a Spark one. The DuckDB
    run is a `fleetledger run` child that runs while this process builds on Spark (whose time
    is mostly one driver thread waiting on Spark's per-statement overhead)."""
    duck = tmp_path_factory.mktemp("duckdb_home")
    generate(duck, start=START, scrape_interval_s=300, **FLEET)
    spark = tmp_path_factory.mktemp("spark_home")
    shutil.copytree(duck, spark, dirs_exist_ok=True)
    with (spark / "fleetledger.yml").open("a") as fh:
        fh.write("\n" + yaml.safe_dump({"warehouse": {"engine": "spark", "spark": SPARK_SESSION}}))
    end = START + timedelta(days=FLEET["days"] - 1)
    cli = str(Path(sys.executable).parent / "fleetledger")
    args = [cli, "run", "--home", str(duck), "--start", START.isoformat()]
    args += ["--end", end.isoformat(), "--accept-warnings"]
    log = tmp_path_factory.mktemp("duckdb_run") / "run.out"
    with log.open("w") as out:
        child = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT)
        try:
            run_pipeline(spark, START, end)
        finally:
            code = child.wait(timeout=1800)
    assert code == 0, log.read_text()[-3000:]
    return {"duckdb": duck, "spark": spark}


def _last_build(home: Path) -> dict:
    runs = [p for p in (home / "build" / "dbt").iterdir() if (p / "run_results.json").is_file()]
    newest = max(runs, key=lambda p: p.stat().st_mtime)
    return {
        "results": json.loads((newest / "run_results.json").read_text())["results"],
        "manifest": json.loads((newest / "manifest.json").read_text()),
    }


def test_the_spark_build_ran_every_model_and_data_test(homes: dict[str, Path]) -> None:
    spark = homes["spark"]
    assert load_config(spark / "fleetledger.yml").warehouse.engine == "spark"
    build = _last_build(spark)
    nodes = build["manifest"]["nodes"]
    assert build["manifest"]["metadata"]["adapter_type"] == "spark"
    models = {k for k, n in nodes.items() if n["resource_type"] == "model"}
    tests = {k for k, n in nodes.items() if n["resource_type"] == "test"}
    status = {r["unique_id"]: r["status"] for r in build["results"]}
    assert {k: status.get(k) for k in models if status.get(k) != "success"} == {}
    # a data test passes, or warns where its severity is warn (as on DuckDB)
    assert {k: status.get(k) for k in tests if status.get(k) not in ("pass", "warn")} == {}
    # every model of the project, and its data tests (each model has at least its grain test)
    assert len(models) == len(list(PROJECT.glob("models/**/*.sql")))
    assert len(tests) > len(models)
    # the marts are Parquet tables of the Spark warehouse, exported to DuckDB for the app
    marts_dir = spark / "build" / "spark" / "warehouse" / "main.db"
    # (`_schemas`: the empty schema files of the tables stored by day, not a table)
    tables = (p.name for p in marts_dir.iterdir() if p.is_dir() and not p.name.startswith("_"))
    assert sorted(tables) == MARTS


def test_every_unit_test_passes_on_spark(homes: dict[str, Path]) -> None:
    spark = homes["spark"]
    cfg = load_config(spark / "fleetledger.yml")
    env = {**os.environ, "FLEETLEDGER_HOME": str(spark), **cfg.warehouse.dbt_env(spark)}
    target = spark / "dbt_unit"
    dbt = str(Path(sys.executable).parent / "dbt")
    args = [dbt, "test", "--resource-type", "unit_test", "--target", "spark"]
    args += ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    args += ["--target-path", str(target), "--log-path", str(spark / "dbt_unit_logs")]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    results = json.loads((target / "run_results.json").read_text())["results"]
    unit = {r["unique_id"]: r["status"] for r in results if r["unique_id"].startswith("unit_test")}
    manifest = json.loads((target / "manifest.json").read_text())
    assert set(unit) == set(manifest["unit_tests"]), done.stdout[-3000:]
    assert {k: s for k, s in unit.items() if s != "pass"} == {}, done.stdout[-3000:]
    assert len(unit) == sum(
        len(yaml.safe_load(p.read_text()).get("unit_tests") or [])
        for p in PROJECT.glob("models/**/*.yml")
    )


def _read_mart(con: duckdb.DuckDBPyConnection, name: str, home: Path) -> pl.DataFrame:
    """A mart with its numbers as doubles, times in UTC, nested values as text, the home's path
    as `<home>`, sorted by every column (numbers last)."""
    columns = con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = 'main' and table_name = ? order by ordinal_position",
        [name],
    ).fetchall()
    select = []
    for col, dtype in columns:
        if col in RUN_COLUMNS:
            continue
        if any(k in dtype for k in ("[]", "STRUCT", "MAP")):
            select.append(f'cast("{col}" as varchar) as "{col}"')
        elif any(k in dtype for k in ("INT", "DECIMAL", "DOUBLE", "FLOAT", "REAL")):
            select.append(f'cast("{col}" as double) as "{col}"')
        elif dtype.startswith("TIMESTAMP"):
            select.append(f'cast("{col}" as timestamptz) as "{col}"')
        else:
            select.append(f'"{col}"')
    frame = pl.from_arrow(
        con.sql(f'select {", ".join(select)} from main."{name}"').to_arrow_table()
    )
    assert isinstance(frame, pl.DataFrame)
    frame = frame.with_columns(pl.col(pl.String).str.replace_all(str(home), "<home>", literal=True))
    numbers = [c for c, t in frame.schema.items() if t.is_float()]
    return frame.sort([c for c in frame.columns if c not in numbers] + numbers, nulls_last=True)


def _differences(name: str, x: pl.DataFrame, y: pl.DataFrame) -> list[str]:
    if x.columns != y.columns:
        return [f"{name}: columns {x.columns} != {y.columns}"]
    if x.height != y.height:
        return [f"{name}: {x.height} rows on DuckDB, {y.height} on Spark"]
    problems = []
    for col in x.columns:
        a, b = x[col], y[col]
        if a.dtype.is_float() and b.dtype.is_float():
            if not a.is_null().equals(b.is_null()):
                problems.append(f"{name}.{col}: nulls differ")
                continue
            pair = pl.DataFrame({"a": a, "b": b})
            rel = pair.select(
                (
                    (pl.col("a") - pl.col("b")).abs() / pl.max_horizontal(pl.col("a").abs(), 1.0)
                ).max()
            ).item()
            if (rel or 0.0) > REL_TOL:
                problems.append(f"{name}.{col}: differs by {rel:.3g} (relative)")
        elif a.dtype != b.dtype:
            problems.append(f"{name}.{col}: {a.dtype} on DuckDB, {b.dtype} on Spark")
        elif not a.equals(b):
            first = next(i for i in range(len(a)) if a[i] != b[i])
            problems.append(f"{name}.{col}: row {first}: {a[first]!r} != {b[first]!r}")
    return problems


def test_every_mart_matches_the_duckdb_build(homes: dict[str, Path]) -> None:
    duck = duckdb.connect(str(homes["duckdb"] / "warehouse.duckdb"), read_only=True)
    spark = duckdb.connect(str(homes["spark"] / "warehouse.duckdb"), read_only=True)
    try:
        problems, rows = [], {}
        for mart in MARTS:
            x = _read_mart(duck, mart, homes["duckdb"])
            y = _read_mart(spark, mart, homes["spark"])
            rows[mart] = x.height
            problems += _differences(mart, x, y)
    finally:
        duck.close()
        spark.close()
    assert problems == []
    # the comparison compared something: the fleet's GPU-hours, runs and bills are there
    assert min(rows["fct_gpu_hours"], rows["fct_runs"], rows["fct_billing"]) > 0, rows


def _day_models(manifest: dict) -> dict[str, int]:
    """The day models of a build (macros/incremental.sql: incremental, one Parquet partition per
    day on Spark), each with how many days before a run's range it rewrites as well (its
    `meta.days_before`)."""
    return {
        node["name"]: int(node["config"]["meta"]["days_before"])
        for node in manifest["nodes"].values()
        if node["resource_type"] == "model" and node["config"].get("meta", {}).get("day_model")
    }


def _partitions(table: Path) -> dict[str, dict[str, int]]:
    """The Parquet files of each `day_epoch=` partition of a Spark table: name -> mtime (ns)."""
    return {
        part.name: {f.name: f.stat().st_mtime_ns for f in part.glob("*.parquet")}
        for part in sorted(table.glob("day_epoch=*"))
    }


def _rows_by_day(table: Path) -> list[tuple[int, int]]:
    if not list(table.glob("*/*.parquet")):
        return []
    sql = "select day_epoch, count(*) from read_parquet(?, hive_partitioning = true) group by 1"
    return sorted(duckdb.execute(sql, [f"{table}/*/*.parquet"]).fetchall())


# the day models this fleet gives no row: its DCGM hosts are all in the inventory, its
# exporters send no DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION and no node has a meter of its own
EMPTY_DAY_MODELS = {
    "int_dcgm_outside_host_days",
    "int_gpu_energy_counter",
    "int_gpu_energy_last_samples",
    "int_node_metered_energy",
    # nor DCGM_EXP_XID_ERRORS_COUNT (its XIDs are the last-XID gauge's)
    "int_health_xid_count_last_samples",
}
# the day models with rows on the second day only: the fleet's one XID (its XID-79 node)
SECOND_DAY_MODELS = {"int_health_xids", "int_health_node_day_xids"}


def test_a_one_day_incremental_run_overwrites_only_that_days_partitions(
    homes: dict[str, Path],
) -> None:
    # runs last (it rewrites the second day's partitions, with the same rows): the day models
    # again with the pipeline's recompute range set to the fleet's second day only
    spark = homes["spark"]
    # the models declared by day in the dbt project are those of the build
    days_before = _day_models(_last_build(spark)["manifest"])
    day_models = sorted(days_before)
    sql = PROJECT.glob("models/**/*.sql")
    assert day_models == sorted(p.stem for p in sql if "incremental_by_day(" in p.read_text())
    # the health day models rewrite the day before the range too (its last sample ends at the
    # range's first: docs/operations.md, "Incremental runs"), the others the range only
    assert days_before["int_health_gpu_samples"] == 1 and days_before["int_gpu_samples"] == 0
    tables = {
        m: spark / "build" / "spark" / "warehouse" / "intermediate.db" / m for m in day_models
    }
    before = {m: _partitions(t) for m, t in tables.items()}
    rows_before = {m: _rows_by_day(t) for m, t in tables.items()}
    first, second = (
        str((START + timedelta(days=i) - date(1970, 1, 1)).days * 86400) for i in (0, 1)
    )
    # a day model without rows has no partition, only the empty file with its schema that the
    # export reads (macros/incremental.sql, spark_schema_file)
    assert {m for m in day_models if not before[m]} == EMPTY_DAY_MODELS
    for m in EMPTY_DAY_MODELS:
        schema_file = tables[m].parent / "_schemas" / m
        assert list(schema_file.glob("*.parquet")), m
    days_of = {
        m: [second] if m in SECOND_DAY_MODELS else [first, second]
        for m in set(day_models) - EMPTY_DAY_MODELS
    }
    for m, days in sorted(days_of.items()):
        # two days (or the second alone), a partition each, each with its files
        assert sorted(before[m]) == [f"day_epoch={d}" for d in days], m
        assert all(before[m].values()), m
    cfg = load_config(spark / "fleetledger.yml")
    day = (START + timedelta(days=1)).isoformat()
    env = {**os.environ, "FLEETLEDGER_HOME": str(spark), **cfg.warehouse.dbt_env(spark)}
    env |= {"FLEETLEDGER_RECOMPUTE_START": day, "FLEETLEDGER_RECOMPUTE_END": day}
    dbt = str(Path(sys.executable).parent / "dbt")
    # with the one-row models that choose the first day of the models stored from a first day
    # on (int_gpu_units_recompute_from, ...): left out, they would still say "full build"
    choosers = sorted(p.stem for p in PROJECT.glob("models/**/*_recompute_from.sql"))
    assert choosers == [
        "int_billing_lines_recompute_from",
        "int_fleet_health_recompute_from",
        "int_gpu_hour_states_recompute_from",
        "int_gpu_units_recompute_from",
        "int_inference_recompute_from",
        "int_node_hour_costs_recompute_from",
        "int_ops_daily_recompute_from",
        "int_spend_recompute_from",
        "int_team_days_recompute_from",
    ]
    args = [dbt, "run", "--target", "spark", "-s", *day_models, *choosers]
    args += ["--project-dir", str(PROJECT), "--profiles-dir", str(PROJECT)]
    args += ["--target-path", str(spark / "dbt_incr"), "--log-path", str(spark / "dbt_incr_logs")]
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:]
    for m, table in tables.items():
        after = _partitions(table)
        if m in EMPTY_DAY_MODELS:
            assert after == {} and _rows_by_day(table) == [], m
            continue
        rewritten = [second] if days_before[m] == 0 else [first, second]
        assert sorted(after) == [f"day_epoch={d}" for d in days_of[m]], m
        for day in days_of[m]:
            key = f"day_epoch={day}"
            assert after[key], m
            if day in rewritten:  # new files
                assert not set(after[key]) & set(before[m][key]), (m, day)
            else:  # untouched: the same names, the same times
                assert after[key] == before[m][key], (m, day)
        # and hold the same rows as the full build's (the same landed data)
        assert _rows_by_day(table) == rows_before[m], m
