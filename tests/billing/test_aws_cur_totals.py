"""AWS CUR source totals: landing the generator's CUR 2.0 export (a local copy) records, per
billing period, data file and currency, the file's own row count and `line_item_unblended_cost`
total in `billing_source_totals`; they equal sums computed with pyarrow from the Parquet files,
the landed rows reconcile with them, and the asset checks beside the ingest asset pass."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import date
from pathlib import Path

import polars as pl
import pyarrow.parquet as pq
import pytest

from fleetledger.generator.bill_files import EXPORT, write_cur
from fleetledger.generator.fleet import build_fleet
from ingest.billing.reconcile import reconcile_totals
from ingest.registry import ingest_source

FLEET_START = date(2026, 10, 30)
DAYS = [date(2026, 10, 30), date(2026, 10, 31), date(2026, 11, 1)]
PERIODS = ["2026-10", "2026-11"]


@pytest.fixture(scope="module")
def export(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("cur-totals")
    write_cur(build_fleet(start=FLEET_START, days=3, seed=1), root / EXPORT)
    return root / EXPORT


def _config(home: Path, export: Path):  # type: ignore[no-untyped-def]
    from aws_cur_helpers import write_config

    return write_config(
        home, {"sources": [{"name": "cur", "kind": "aws_cur", "location": str(export)}]}
    )


def by_hand(export: Path, period: str) -> dict[tuple[str, str | None], tuple[int, float]]:
    """(data file name, currency) → (rows, sum of line_item_unblended_cost), with pyarrow."""
    out: dict[tuple[str, str | None], list[float]] = defaultdict(lambda: [0, 0.0])
    files = sorted((export / f"data/BILLING_PERIOD={period}").rglob("*.parquet"))
    assert files
    for f in files:
        t = pq.read_table(f, columns=["line_item_currency_code", "line_item_unblended_cost"])
        for cur, cost in zip(t.column(0).to_pylist(), t.column(1).to_pylist(), strict=True):
            acc = out[(f.name, cur)]
            acc[0] += 1
            acc[1] += cost or 0.0
    return {k: (int(v[0]), v[1]) for k, v in out.items()}


def test_totals_equal_the_files_own(tmp_path: Path, export: Path) -> None:
    home = tmp_path / "home"
    cfg = _config(home, export)
    report = ingest_source(cfg, cfg.source("cur"), DAYS, home)
    assert sorted(report.partitions) == [f"period={p}" for p in PERIODS]
    for period in PERIODS:
        part = home / f"raw/billing_source_totals/cur/period={period}/part-0.parquet"
        totals = pl.read_parquet(part)
        assert set(totals["landing_table"]) == {"aws_cur_lines"}
        assert set(totals["period"]) == {period}
        assert set(totals["total_basis"]) == {"line_item_unblended_cost"}
        assert totals["quarantined_rows"].sum() == 0
        assert totals["unreadable_rows"].sum() == 0
        got = {
            (r["x_source_file"].rsplit("/", 1)[-1], r["currency"]): (
                r["source_rows"],
                r["source_total"],
            )
            for r in totals.iter_rows(named=True)
        }
        want = by_hand(export, period)
        assert got.keys() == want.keys()
        for key, (rows, total) in want.items():
            assert got[key][0] == rows
            assert math.isclose(got[key][1], total, rel_tol=1e-9, abs_tol=1e-9)
        assert sum(r for r, _ in want.values()) > 0
        result = reconcile_totals(home, "aws_cur_lines", "cur", f"period={period}")
        assert result.matches and result.accounted, result.summary()


def test_a_missing_period_records_empty_totals(tmp_path: Path, export: Path) -> None:
    home = tmp_path / "home"
    cfg = _config(home, export)
    ingest_source(cfg, cfg.source("cur"), [date(2026, 12, 1)], home)
    part = home / "raw/billing_source_totals/cur/period=2026-12/part-0.parquet"
    assert pl.read_parquet(part).height == 0
    result = reconcile_totals(home, "aws_cur_lines", "cur", "period=2026-12")
    assert result.recorded and result.matches and result.accounted


def test_checks_run_beside_the_ingest_asset(tmp_path: Path, export: Path) -> None:
    from dagster import (
        AssetSelection,
        DagsterInstance,
        Definitions,
        define_asset_job,
    )

    from ingest.registry import spec_for
    from orchestration.checks import source_checks
    from orchestration.ingest_assets import build_ingest_asset
    from orchestration.resources import FleetResource

    assert spec_for("aws_cur").records_totals
    home = tmp_path / "home"
    cfg = _config(home, export)
    source = cfg.source("cur")
    checks_defs = source_checks(cfg)
    defs = Definitions(
        assets=[build_ingest_asset(source), *checks_defs],
        jobs=[define_asset_job("ingest", selection=AssetSelection.all())],
        resources={"fleet": FleetResource(home=str(home))},
    )
    result = defs.resolve_job_def("ingest").execute_in_process(
        partition_key=DAYS[0].isoformat(),
        instance=DagsterInstance.ephemeral(),
        raise_on_error=False,
    )
    checks = {}
    for e in result.all_events:
        if e.event_type_value == "ASSET_CHECK_EVALUATION":
            d = e.asset_check_evaluation_data
            checks[d.check_name] = (d.passed, d.description)
    assert checks["source_totals_accounted"][0], checks["source_totals_accounted"][1]
    assert checks["source_totals_match"][0], checks["source_totals_match"][1]
    assert "landed totals equal the source's in 1 periods" in checks["source_totals_match"][1]
