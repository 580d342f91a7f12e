"""Landing quality: the Great Expectations suites on landed billing partitions (samples pass,
broken frames fail naming the column and what was found), the reconciliation of landed totals
with the source's own, a suite declared for another table, and the checks run by Dagster beside
an ingest asset (blocking on a failed suite, warning on quarantined money)."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from test_focus_samples import DAY, focus_config, sample_rows, write_csv
from test_gcp_billing_files import CSV_2020, gcp_samples

from fleetledger.config import Config
from ingest.billing.reconcile import reconcile_totals
from ingest.core.quality import (
    Suite,
    Within,
    register_suite,
    validate_frame,
    validate_partition,
)
from ingest.registry import ingest_source


@pytest.fixture(scope="module")
def landed_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """FOCUS sample rows (two periods) and the 2020 GCP CSV sample, landed."""
    home = tmp_path_factory.mktemp("quality")
    header, rows = sample_rows()
    f = write_csv(
        home / "focus.csv",
        header,
        rows[:300] + [r for r in rows if r["BillingPeriodStart"] > "2024-10"],
    )
    cfg = focus_config(f)
    ingest_source(cfg, cfg.source("focus"), [DAY], home)
    cfg = Config.model_validate(
        {
            "sources": [
                {"name": "gcp", "kind": "gcp_billing", "location": str(gcp_samples() / CSV_2020)}
            ]
        }
    )
    ingest_source(cfg, cfg.source("gcp"), [date(2020, 11, 9)], home)
    return home


def test_suites_pass_on_landed_samples(landed_home: Path) -> None:
    for table, source, partition, rows in (
        ("focus_lines", "focus", "period=2024-09", 300),
        ("focus_lines", "focus", "period=2024-10", 1),
        ("gcp_billing_lines", "gcp", "period=2020-11", 25),
        ("billing_source_totals", "focus", "period=2024-09", 1),
    ):
        result = validate_partition(landed_home, table, source, partition)
        assert result.passed, result.summary()
        assert result.rows == rows
        assert result.expectations > 20
    for source, partition, table in (
        ("focus", "period=2024-09", "focus_lines"),
        ("gcp", "period=2020-11", "gcp_billing_lines"),
    ):
        totals = reconcile_totals(landed_home, table, source, partition)
        assert totals.matches and totals.accounted, totals.summary()


def test_broken_landing_fails_naming_the_column(landed_home: Path) -> None:
    df = pl.read_parquet(landed_home / "raw/gcp_billing_lines/gcp/period=2020-11/part-0.parquet")
    broken = df.with_columns(
        pl.when(pl.col("x_line_number") == 2)
        .then(pl.lit("usd"))
        .otherwise("currency")
        .alias("currency"),
        pl.when(pl.col("x_line_number") == 3)
        .then(pl.lit("202012"))
        .otherwise("invoice_month")
        .alias("invoice_month"),
        pl.col("cost").cast(pl.String),
        pl.when(pl.col("x_line_number") == 4).then(None).otherwise("x_source").alias("x_source"),
    ).drop("labels")
    result = validate_frame(broken, "gcp_billing_lines", "period=2020-11", source="gcp")
    assert not result.passed
    by_column = {(f.column, f.expectation.split("(")[0]): f.detail for f in result.failures}
    assert by_column == {
        ("labels", "expect_column_to_exist"): "failed",
        ("cost", "expect_column_values_to_be_of_type"): "found 'str'",
        ("currency", "expect_column_values_to_be_in_set"): "1 rows (4 %); e.g. 'usd'",
        ("invoice_month", "expect_column_values_to_be_in_set"): "1 rows (4 %); e.g. '202012'",
        ("x_source", "expect_column_values_to_not_be_null"): "1 rows (4 %)",
    }
    assert "expect_column_values_to_be_in_set(value_set=['202011'])" in result.summary()


def test_a_suite_for_another_table() -> None:
    """How a telemetry table gets its suite: a declaration and a frame."""
    suite = register_suite(
        Suite(
            table="toy_power",
            columns={"time": "timestamp", "site": "string", "kw": "float", "n": "int"},
            not_null=("time", "site"),
            ranges={"kw": (0, None)},
            value_sets={"site": ("dc1", "dc2")},
            within=(Within("time"),),
        )
    )
    day = datetime(2026, 10, 2, tzinfo=UTC)
    good = pl.DataFrame(
        {
            "time": [day, day + timedelta(hours=23)],
            "site": ["dc1", "dc2"],
            "kw": [1.5, 0.0],
            "n": [1, None],
        }
    )
    assert validate_frame(good, suite, "date=2026-10-02").passed
    bad = good.with_columns(kw=pl.Series([-1.0, 2.0]), time=pl.Series([day, day + timedelta(1)]))
    failures = {
        f.column: f.detail for f in validate_frame(bad, "toy_power", "date=2026-10-02").failures
    }
    assert set(failures) == {"kw", "time"}
    assert "-1.0" in failures["kw"]


def test_reconcile_totals_names_quarantined_and_lost_money(tmp_path: Path) -> None:
    header, rows = sample_rows()
    rows = [dict(r) for r in rows[:20]]
    rows[4]["BillingCurrency"] = "XYZ1"  # quarantined
    f = write_csv(tmp_path / "focus.csv", header, rows)
    cfg = focus_config(f)
    home = tmp_path / "home"
    ingest_source(cfg, cfg.source("focus"), [DAY], home)
    result = reconcile_totals(home, "focus_lines", "focus", "period=2024-09")
    assert result.recorded and result.accounted and not result.matches
    bad = [x for x in result.lines if not x.matches]
    assert [(x.currency, x.quarantined_rows, x.landed_rows) for x in bad] == [("XYZ1", 1, 0)]
    assert bad[0].quarantined_total == pytest.approx(float(Decimal(rows[4]["BilledCost"])))
    assert "in 1 quarantined rows" in result.summary()

    # a landed row goes missing: the totals no longer account for the source
    part = home / "raw/focus_lines/focus/period=2024-09/part-0.parquet"
    landed = pl.read_parquet(part)
    dropped = landed.filter(pl.col("x_line_number") == 3)["BilledCost"][0]
    assert dropped != 0
    landed.filter(pl.col("x_line_number") != 3).write_parquet(part)
    result = reconcile_totals(home, "focus_lines", "focus", "period=2024-09")
    assert not result.accounted
    usd = next(x for x in result.lines if x.currency == "USD")
    expected = sum(Decimal(r["BilledCost"]) for i, r in enumerate(rows) if i != 4)
    assert usd.source_total == pytest.approx(float(expected))
    assert usd.source_total - usd.landed_total == pytest.approx(dropped)


def test_checks_run_beside_the_ingest_asset(tmp_path: Path) -> None:
    from dagster import AssetSelection, DagsterInstance, Definitions, define_asset_job

    from orchestration.ingest_assets import build_ingest_asset
    from orchestration.quality import landing_checks
    from orchestration.resources import FleetResource

    header, rows = sample_rows()
    folder = tmp_path / "exports"
    folder.mkdir()
    f = write_csv(folder / "focus.csv", header, rows[:40])
    home = tmp_path / "home"
    cfg = focus_config(folder / "*.csv")
    source = cfg.source("focus")
    defs = Definitions(
        assets=[build_ingest_asset(source), *landing_checks(source, totals=True)],
        jobs=[define_asset_job("ingest", selection=AssetSelection.all())],
        resources={"fleet": FleetResource(home=str(home))},
    )
    home.mkdir()
    (home / "fleetledger.yml").write_text(
        f"sources:\n  - {{name: focus, kind: focus, location: '{folder}/*.csv'}}\n"
    )

    def run() -> dict[str, tuple[bool, str, bool, str]]:
        result = defs.resolve_job_def("ingest").execute_in_process(
            partition_key=DAY.isoformat(),
            instance=DagsterInstance.ephemeral(),
            raise_on_error=False,
        )
        out = {}
        for e in result.all_events:
            if e.event_type_value == "ASSET_CHECK_EVALUATION":
                d = e.asset_check_evaluation_data
                out[d.check_name] = (d.passed, d.severity.value, bool(d.blocking), d.description)
        return out

    checks = run()
    assert {k: v[:3] for k, v in checks.items()} == {
        "landing_expectations": (True, "ERROR", True),
        "source_totals_accounted": (True, "ERROR", True),
        "source_totals_match": (True, "WARN", False),
        "source_available": (True, "ERROR", False),
    }
    assert "partitions of focus_lines pass (40 rows" in checks["landing_expectations"][3]

    # an unknown ChargeCategory (a suite failure) and a quarantined row (money not landed)
    rows = [dict(r) for r in rows[:40]]
    rows[0]["ChargeCategory"] = "Refund"
    rows[1]["BilledCost"] = "n/a"
    rows[2]["ChargePeriodEnd"] = "never"
    write_csv(f, header, rows)
    checks = run()
    passed = {k: v[0] for k, v in checks.items()}
    assert passed == {
        "landing_expectations": False,
        "source_totals_accounted": True,
        "source_totals_match": False,
        "source_available": True,
    }
    assert "ChargeCategory: expect_column_values_to_be_in_set" in checks["landing_expectations"][3]
    assert "e.g. 'Refund'" in checks["landing_expectations"][3]
    expected = Decimal(rows[2]["BilledCost"])  # line 3's cost is unreadable, line 4's is not
    assert f"{float(expected):.6f} in 2 quarantined rows" in checks["source_totals_match"][3]
