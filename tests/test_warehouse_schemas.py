"""Where the dbt layers are published: marts alone in schema `main`, staging views in `staging`,
intermediate and utility tables in `intermediate` (dbt_project/macros/schemas.sql); every
intermediate model documented column by column in its domain folder's yml."""

from __future__ import annotations

from pathlib import Path

import duckdb
import yaml
from dbt_in_process import dbt_build

from fleetledger.alerts.warehouse import MART_TABLES as ALERT_MARTS
from fleetledger.forecasting.build import FORECAST_MARTS
from fleetledger.publish import _row_counts, build_path, connect_build, history_path
from fleetledger.queries import available_marts, connect

MODELS = Path(__file__).resolve().parents[1] / "dbt_project" / "models"


def _relations(path: Path) -> dict[str, set[str]]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        rows = con.execute(
            "select table_schema, table_name from information_schema.tables"
        ).fetchall()
    finally:
        con.close()
    out: dict[str, set[str]] = {}
    for schema, name in rows:
        out.setdefault(schema, set()).add(name)
    return out


def test_main_holds_only_the_marts(pipeline_home: Path) -> None:
    published = pipeline_home / "warehouse.duckdb"
    relations = _relations(published)
    assert set(relations) == {"main", "staging", "intermediate"}
    # the dbt marts, and those the forecasts and alerts steps write after dbt
    marts = {p.stem for p in (MODELS / "marts").glob("*.sql")}
    marts |= set(FORECAST_MARTS) | set(ALERT_MARTS)
    assert relations["main"] == marts
    assert all(n.startswith(("fct_", "dim_")) for n in relations["main"])
    assert all(n.startswith("stg_") for n in relations["staging"])
    assert all(n.startswith("int_") for n in relations["intermediate"])
    # what the app, the notebooks and the publish step list as marts
    with connect(published) as con:
        assert available_marts(con) == marts
    assert set(_row_counts(published)) == marts


def _documented() -> dict[str, tuple[Path, dict]]:
    out: dict[str, tuple[Path, dict]] = {}
    files = [*(MODELS / "intermediate").rglob("_int_*__models.yml")]
    files += [*(MODELS / "utilities").glob("_*__models.yml")]
    for path in files:
        for model in yaml.safe_load(path.read_text())["models"]:
            assert model["name"] not in out, model["name"]
            out[model["name"]] = (path, model)
    return out


def _day_models() -> set[str]:
    return {p.stem for p in MODELS.rglob("*.sql") if "incremental_by_day(" in p.read_text()}


def test_the_day_models_live_in_their_own_file_and_are_not_published(
    pipeline_home: Path,
) -> None:
    # build/history.duckdb holds the day models (every sample of every day) and nothing else;
    # the build warehouse and the published snapshot hold everything else, and no day model
    day_models = _day_models()
    assert len(day_models) >= 20
    assert _relations(history_path(pipeline_home)) == {"intermediate": day_models}
    assert not day_models & _relations(build_path(pipeline_home))["intermediate"]
    assert not day_models & _relations(pipeline_home / "warehouse.duckdb")["intermediate"]
    # the build, opened with its history attached, reads both
    with connect_build(pipeline_home) as con:
        row = con.execute(
            "select count(*) from history.intermediate.int_gpu_samples as s "
            "join intermediate.int_gpus as g using (gpu_uuid)"
        ).fetchone()
    assert row is not None and row[0] > 0


def test_every_intermediate_model_and_column_is_documented(pipeline_home: Path) -> None:
    # the intermediate tables of the build warehouse and of the day models' file
    con = connect_build(pipeline_home)
    try:
        columns: dict[str, list[str]] = {}
        for table, column in con.execute(
            "select table_name, column_name from information_schema.columns "
            "where table_schema = 'intermediate' and table_catalog in ('warehouse', 'history') "
            "order by table_name, ordinal_position"
        ).fetchall():
            columns.setdefault(table, []).append(column)
    finally:
        con.close()
    documented = _documented()
    sql = [*(MODELS / "intermediate").rglob("int_*.sql"), *(MODELS / "utilities").glob("*.sql")]
    assert {p.stem for p in sql} == set(documented) == set(columns)
    for path in sql:
        yml, model = documented[path.stem]
        assert yml.parent == path.parent, f"{path.stem} is described in {yml}"
        assert model.get("description"), path.stem
        described = [c["name"] for c in model.get("columns", []) if c.get("description")]
        assert described == columns[path.stem], path.stem


def test_a_build_drops_what_moved_out_of_main(tmp_path: Path) -> None:
    """A warehouse built before the layers had schemas of their own: the staging, intermediate
    and utility relations left in `main` are dropped by the next build; anything else stays."""
    home = tmp_path / "home"
    (home / "build").mkdir(parents=True)
    con = duckdb.connect(str(home / "build" / "warehouse.duckdb"))
    con.execute("create table main.int_days as select 1 as day_epoch")
    con.execute("create view main.stg_config__teams as select 1 as team")
    con.execute("create table main.notes as select 1 as n")
    # a day model built before the day models had a file of their own (build/history.duckdb)
    con.execute("create schema intermediate")
    con.execute("create table intermediate.int_gpu_samples as select 1 as day_epoch")
    con.close()
    dbt_build(home, "int_integers")
    relations = _relations(home / "build" / "warehouse.duckdb")
    assert relations["main"] == {"notes"}
    assert relations["intermediate"] == {"int_integers"}


def test_a_build_drops_a_retired_day_model_from_the_history_file(tmp_path: Path) -> None:
    """`int_sample_intervals` was a day model until it became a CTE of `int_sample_pieces`: a
    home built before keeps its table in build/history.duckdb, which the next build drops (its
    rows would stay there for nothing); another table of the file stays."""
    home = tmp_path / "home"
    (home / "build").mkdir(parents=True)
    con = duckdb.connect(str(home / "build" / "history.duckdb"))
    con.execute("create schema intermediate")
    con.execute("create table intermediate.int_sample_intervals as select 1 as day_epoch")
    con.execute("create table intermediate.int_gpu_samples as select 1 as day_epoch")
    con.close()
    dbt_build(home, "int_integers")
    assert _relations(home / "build" / "history.duckdb") == {"intermediate": {"int_gpu_samples"}}


def test_a_build_drops_what_no_model_builds_from_the_dbt_schemas(tmp_path: Path) -> None:
    """A model an upgrade renamed (int_spend_inputs became int_spend_line_inputs and
    int_spend_run_inputs), a view of a retired staging model and a `__dbt_tmp` table a killed
    build left: the next build drops them from the dbt-only schemas of both files, so no
    published snapshot keeps rows no model traces to. `main` (the forecast and alert steps'
    tables) and the relations of the project's models stay."""
    home = tmp_path / "home"
    (home / "build").mkdir(parents=True)
    con = duckdb.connect(str(home / "build" / "warehouse.duckdb"))
    for schema in ("staging", "intermediate"):
        con.execute(f"create schema {schema}")
    con.execute("create table intermediate.int_spend_inputs as select 1 as cost")
    con.execute("create table intermediate.int_gpus__dbt_tmp as select 1 as x")
    con.execute("create table intermediate.int_days as select 1 as day_epoch")
    con.execute("create view staging.stg_retired as select 1 as x")
    con.execute("create table main.fct_alerts as select 1 as x")
    con.close()
    con = duckdb.connect(str(home / "build" / "history.duckdb"))
    con.execute("create schema intermediate")
    con.execute("create table intermediate.int_old_day_model as select 1 as day_epoch")
    con.close()
    dbt_build(home, "int_integers")
    relations = _relations(home / "build" / "warehouse.duckdb")
    assert relations["intermediate"] == {"int_days", "int_integers"}
    assert "staging" not in relations or relations["staging"] == set()
    assert relations["main"] == {"fct_alerts"}
    assert _relations(home / "build" / "history.duckdb") == {}
