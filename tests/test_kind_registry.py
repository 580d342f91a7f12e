"""The kind registry (ingest/registry.py) is the one list of source kinds: the config's kinds,
the Dagster assets, groups and checks, the landing schemas and the dbt sources all follow it,
and a kind registered in a test (reader + spec, nothing else edited) appears everywhere."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest
import yaml
from dagster import AssetKey, DagsterInstance, Definitions
from pydantic import ValidationError

from fleetledger import config_tables
from fleetledger.config import Source, load_config
from ingest import registry
from ingest.core.columns import F64, STR, TS
from ingest.core.common import ReadResult, read_bytes
from ingest.core.landing import PIPELINE_TABLES, SCHEMAS, empty_quarantine, polars_schema
from ingest.core.partitions import land_files
from ingest.core.quality import SUITES, Suite, register_suite
from ingest.core.spec import KindSpec
from orchestration.build import build_definitions

REPO = Path(__file__).resolve().parents[1]
MODELS = REPO / "dbt_project" / "models"


def dbt_landing_tables() -> set[str]:
    """Every table of the dbt source `landing`, over all the sources files of the project."""
    tables: set[str] = set()
    for path in MODELS.rglob("*.yml"):
        doc = yaml.safe_load(path.read_text()) or {}
        for source in doc.get("sources") or []:
            if source.get("name") == "landing":
                tables |= {t["name"] for t in source.get("tables") or []}
    return tables


def test_dbt_sources_are_the_kinds_tables() -> None:
    """The landing tables dbt reads are the kinds' tables, the pipeline's own (accounted days,
    data-health history, quarantine) and the config tables, nothing else."""
    expected = registry.tables() | set(PIPELINE_TABLES) | set(config_tables.TABLES)
    assert dbt_landing_tables() == expected


def test_every_kind_table_has_its_schema_and_checks() -> None:
    for spec in registry.specs():
        assert spec.group in {"billing", "telemetry", "scheduler"}, spec.kind
        for table, columns in spec.tables.items():
            assert table in SCHEMAS, (spec.kind, table)
            assert [f.name for f in SCHEMAS[table]][: len(columns)] == [c for c, _ in columns]
        if spec.suite is not None:
            # the main table and each format's table have a Great Expectations suite
            for table in {spec.table, *spec.format_tables.values()}:
                assert table in SUITES, (spec.kind, table)
        assert spec.records_totals == ("billing_source_totals" in spec.tables), spec.kind


def test_config_accepts_exactly_the_registered_kinds() -> None:
    for kind in registry.kind_names():
        assert Source(name="s", kind=kind, location="x").kind == kind
    with pytest.raises(ValidationError, match="unknown source kind 'azure_costs'"):
        Source(name="s", kind="azure_costs", location="x")


@pytest.mark.parametrize("name", ["build", "config", "landing"])
def test_the_runs_own_findings_sources_are_not_source_names(name: str) -> None:
    """The run lands its own data-health findings under these names (the config's, the day
    models' file set aside, crashed writes settled), each replacing its earlier ones: a
    configured source so named would have its ingest findings overwritten every run."""
    with pytest.raises(ValidationError, match=f"source name '{name}' is reserved"):
        Source(name=name, kind="slurm", location="x")
    assert Source(name=f"{name}-2", kind="slurm", location="x").name == f"{name}-2"


def test_every_kind_gets_an_asset_in_its_group(tmp_path: Path) -> None:
    sources = [
        {"name": spec.kind.replace("_", "-"), "kind": spec.kind, "location": "files/*"}
        for spec in registry.specs()
    ]
    (tmp_path / "fleetledger.yml").write_text(yaml.safe_dump({"sources": sources}))
    defs = build_definitions(tmp_path)
    graph = defs.resolve_asset_graph()
    checks = {(k.asset_key.path[-1], k.name) for k in graph.asset_check_keys}
    for spec in registry.specs():
        name = spec.kind.replace("_", "-")
        assert graph.get(AssetKey(["raw", name])).group_name == spec.group
        if spec.suite is not None:
            assert (name, "landing_expectations") in checks, spec.kind
        assert ((name, "source_totals_accounted") in checks) == spec.records_totals
        # every ingest asset reports whether its source could be read at all
        assert (name, "source_available") in checks, spec.kind


# --------------------------------------------------------------------------- a fake kind

FAKE_TABLE = "fake_meter_readings"
FAKE_COLUMNS = [("time", TS), ("meter", STR), ("kwh", F64)]


def read_fake(path: Path, _day: date | None, source: str, _options: dict[str, Any]) -> ReadResult:
    """`time,meter,kwh` lines; a line whose kwh is not a number is rejected."""
    rows, bad = [], []
    for n, line in enumerate(read_bytes(path).decode().splitlines(), start=1):
        t, meter, kwh = line.split(",")
        try:
            rows.append((datetime.fromisoformat(t).replace(tzinfo=UTC), meter, float(kwh), n))
        except ValueError:
            bad.append((source, str(path), n, f"kwh is not a number: {kwh!r}", line))
    frame = pl.DataFrame(
        [(*r[:3], source, str(path), r[3]) for r in rows],
        schema=polars_schema(FAKE_TABLE),
        orient="row",
    )
    quarantine = pl.concat(
        [empty_quarantine(), pl.DataFrame(bad, schema=empty_quarantine().schema, orient="row")]
    )
    return ReadResult(frame, quarantine, files=[str(path)])


FAKE = KindSpec(
    kind="fake_meter",
    group="telemetry",
    description="a kind declared only in this test",
    tables={FAKE_TABLE: FAKE_COLUMNS},
    read=read_fake,
    land=land_files,
    day=lambda _table: pl.col("time").dt.date(),
    suite="warning",
)


@pytest.fixture
def fake_kind() -> Iterator[KindSpec]:
    registry.register(FAKE)
    register_suite(
        Suite(
            table=FAKE_TABLE,
            columns={
                "time": "timestamp",
                "meter": "string",
                "kwh": "float",
                "x_source": "string",
                "x_source_file": "string",
                "x_line_number": "int",
            },
            not_null=("time", "meter", "kwh"),
            ranges={"kwh": (0, None)},
        )
    )
    yield FAKE
    registry.unregister(FAKE.kind)
    SUITES.pop(FAKE_TABLE, None)


def test_a_kind_registered_in_a_test_appears_everywhere(
    fake_kind: KindSpec, tmp_path: Path
) -> None:
    day = date(2026, 11, 2)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / f"{day}.csv").write_text(
        f"{day}T00:00:00,m1,1.5\n{day}T01:00:00,m1,2.0\n{day}T02:00:00,m1,n/a\n"
    )
    cfg_file = tmp_path / "fleetledger.yml"
    source = {"name": "meters", "kind": "fake_meter", "location": "m/{date}.csv"}
    cfg_file.write_text(yaml.safe_dump({"sources": [source]}))
    # config validation knows the kind
    assert load_config(cfg_file).source("meters").kind == "fake_meter"
    # Dagster: the ingest asset in the spec's group, and the landing check beside it
    defs = build_definitions(tmp_path)
    Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    key = AssetKey(["raw", "meters"])
    assert graph.get(key).group_name == "telemetry"
    assert {k.name for k in graph.asset_check_keys if k.asset_key == key} == {
        "landing_expectations",
        "source_available",
    }
    # and it runs: 2 rows landed, 1 quarantined, the check passes
    job = defs.resolve_implicit_global_asset_job_def()
    result = job.execute_in_process(
        partition_key=day.isoformat(),
        instance=DagsterInstance.ephemeral(),
        asset_selection=[key],
    )
    assert result.success
    landed = pl.read_parquet(tmp_path / "raw" / FAKE_TABLE / "meters" / f"date={day}")
    assert landed["kwh"].to_list() == [1.5, 2.0]
    q = pl.read_parquet(tmp_path / "raw" / "quarantine" / "meters" / f"date={day}")
    assert q["reason"].to_list() == ["kwh is not a number: 'n/a'"]
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    assert set(checks) == {"landing_expectations", "source_available"}
    check = checks["landing_expectations"]
    assert check.passed and check.metadata["quarantined_rows"].value == 1
    assert checks["source_available"].passed
    # gone again after the test: nothing else knows it
    registry.unregister("fake_meter")
    assert "fake_meter" not in registry.kind_names() and FAKE_TABLE not in SCHEMAS
    registry.register(FAKE)
