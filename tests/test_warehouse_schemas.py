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
from fleetledger.publish import _row_counts
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


def test_every_intermediate_model_and_column_is_documented(pipeline_home: Path) -> None:
    con = duckdb.connect(str(pipeline_home / "warehouse.duckdb"), read_only=True)
    try:
        columns: dict[str, list[str]] = {}
        for table, column in con.execute(
            "select table_name, column_name from information_schema.columns "
            "where table_schema = 'intermediate' order by table_name, ordinal_position"
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
    con.close()
    dbt_build(home, "int_integers")
    relations = _relations(home / "build" / "warehouse.duckdb")
    assert relations["main"] == {"notes"}
    assert "int_integers" in relations["intermediate"]
