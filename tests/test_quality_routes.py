"""The two routes of the landing suites agree: Great Expectations (pandas) and the polars route
large partitions take (ingest/core/quality_fast.py) give the same verdict, the same failed
expectations (column and rule) and the same unexpected counts on the same frames."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from fleetledger.config import Config
from ingest.core.landing import land, polars_schema
from ingest.core.quality import (
    QualityResult,
    pick_route,
    read_partition,
    suite_for,
    validate_frame,
)
from ingest.core.quality_landed import landed_columns_read, prepare, validate_landed
from ingest.registry import ingest_source
from ingest.scheduler.slurm import read_sacct
from ingest.telemetry.power import read_power

T0 = datetime(2026, 10, 2, 12, tzinfo=UTC)
DAY = "date=2026-10-02"


def both(frame: pl.DataFrame, table: str, partition: str) -> QualityResult:
    """Both routes on `frame`; they must agree. Returns the polars route's result."""
    gx = validate_frame(frame, table, partition, source="s", route="gx")
    fast = validate_frame(frame, table, partition, source="s", route="polars")
    assert (fast.rows, fast.expectations, fast.passed) == (gx.rows, gx.expectations, gx.passed)

    def rules(r: QualityResult) -> list[tuple[str | None, str, str]]:
        # the rule, its column and the unexpected count ("3 rows (1.2 %)"), not the sample
        return sorted((f.column, f.expectation, f.detail.split(";")[0]) for f in r.failures)

    fast_rules, gx_rules = rules(fast), rules(gx)
    # a missing column and a type are reported in each engine's words; the rules agree
    assert [r[:2] for r in fast_rules] == [r[:2] for r in gx_rules]
    assert [r for r in fast_rules if "rows" in r[2]] == [r for r in gx_rules if "rows" in r[2]]
    return fast


def counts(r: QualityResult) -> dict[tuple[str | None, str], str]:
    return {(f.column, f.expectation.split("(")[0]): f.detail.split(";")[0] for f in r.failures}


def _dcgm(rows: list[dict]) -> pl.DataFrame:
    schema = polars_schema("dcgm_samples")
    df = pl.DataFrame(rows)
    given = {
        "gpu": pl.lit(0),
        "uuid": pl.lit("GPU-1"),
        "x_source": pl.lit("dcgm"),
        "x_source_file": pl.lit("f.prom"),
        "x_line_number": pl.col("line"),
    }
    return df.select(
        (given.get(c, pl.col(c)) if c in given or c in df.columns else pl.lit(None))
        .cast(t)
        .alias(c)
        for c, t in schema.items()
    )


METRICS = [
    ("DCGM_FI_DEV_GPU_UTIL", 87.0),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.87),
    ("DCGM_FI_DEV_POWER_USAGE", 412.5),
    ("DCGM_FI_DEV_SM_CLOCK", 1980.0),
]
GOOD = [
    {
        "time": T0 + timedelta(seconds=30 * i),
        "host": "a01",
        "metric": m,
        "value": v,
        "line": i * 4 + j,
    }
    for i in range(5)
    for j, (m, v) in enumerate(METRICS)
]  # 20 rows: 5 scrapes x 4 metrics of one GPU


def test_dcgm_good_and_broken_rows_agree() -> None:
    ok = both(prepare(_dcgm(GOOD), "dcgm_samples"), "dcgm_samples", DAY)
    assert ok.passed and ok.rows == 20 and ok.expectations == 46
    late = T0 + timedelta(minutes=10)
    bad = [
        {"time": late, "host": "a01", "metric": "DCGM_FI_DEV_GPU_UTIL", "value": 101.0, "line": 90},
        {
            "time": late,
            "host": "a01",
            "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
            "value": 1.5,
            "line": 91,
        },
        {
            "time": late,
            "host": "a01",
            "metric": "DCGM_FI_DEV_POWER_USAGE",
            "value": -1.0,
            "line": 92,
        },
        # an older sample of its series after newer ones
        {"time": T0, "host": "a01", "metric": "DCGM_FI_DEV_SM_CLOCK", "value": 1980.0, "line": 93},
        # no host; a NaN value (missing to pandas, so no range applies, but not null either)
        {"time": late, "host": None, "metric": "DCGM_FI_DEV_SM_CLOCK", "value": 1.0, "line": 94},
        {
            "time": late,
            "host": "a02",
            "metric": "DCGM_FI_DEV_GPU_UTIL",
            "value": float("nan"),
            "line": 95,
        },
    ]
    result = both(prepare(_dcgm(GOOD + bad), "dcgm_samples"), "dcgm_samples", DAY)
    # 26 rows (20 good, 6 bad); GX's share is of the values a rule evaluates (missing ones,
    # null or NaN, excluded, except for not_null)
    assert counts(result) == {
        ("host", "expect_column_values_to_not_be_null"): "1 rows (3.85 %)",  # 1 of 26
        ("value", "expect_column_values_to_not_be_null"): "1 rows (3.85 %)",  # the NaN
        # GPU_UTIL: 5 good + 101 (+ the NaN, missing) = 6 evaluated, 1 out of range
        ("value_percent_metrics", "expect_column_values_to_be_between"): "1 rows (16.7 %)",
        # GR_ENGINE_ACTIVE: 5 good + 1.5 = 6, 1 out
        ("value_ratio_metrics", "expect_column_values_to_be_between"): "1 rows (16.7 %)",
        # POWER 5 + 1 and SM_CLOCK 5 + 2 = 13 evaluated, the -1 W one out
        ("value_non_negative_metrics", "expect_column_values_to_be_between"): "1 rows (7.69 %)",
        # the SM clock at T0 after T0 + 2 min of its series (a01, gpu 0); 1 of 26
        ("x_time_increasing", "expect_column_values_to_be_in_set"): "1 rows (3.85 %)",
    }


def test_missing_and_mistyped_columns_agree() -> None:
    frame = (
        prepare(_dcgm(GOOD), "dcgm_samples").drop("uuid").with_columns(pl.col("gpu").cast(pl.Int64))
    )
    result = both(frame, "dcgm_samples", DAY)
    assert sorted(counts(result)) == [
        ("gpu", "expect_column_values_to_be_of_type"),
        ("uuid", "expect_column_to_exist"),
        # the series key lacks uuid: the monotonic flag is computed before the drop, so it
        # still holds; only the two schema rules fail
    ]


def test_slurm_sample_broken_rows_agree(samples: Path) -> None:
    from scheduler.test_sched_quality import HB, HB_OPTIONS

    rows = read_sacct(samples / HB, source="hb", options=HB_OPTIONS).rows
    assert both(prepare(rows, "slurm_jobs"), "slurm_jobs", "date=2024-04-19").passed
    first = pl.col("x_line_number") == rows["x_line_number"][0]
    broken = pl.concat(
        [
            rows.with_columns(
                state=pl.when(first).then(pl.lit("EXPLODED")).otherwise(pl.col("state")),
                gpus=pl.when(first).then(-1).otherwise(pl.col("gpus")),
                end=pl.when(first)
                .then(pl.col("start") - pl.duration(hours=1))
                .otherwise(pl.col("end")),
            ),
            rows.head(1),  # the first line again: its (file, line) key twice
        ]
    )
    result = both(prepare(broken, "slurm_jobs"), "slurm_jobs", "date=2024-04-19")
    assert set(counts(result)) == {
        ("end", "expect_column_pair_values_a_to_be_greater_than_b"),
        ("gpus", "expect_column_values_to_be_between"),
        ("state", "expect_column_values_to_be_in_set"),
        ("x_source_file,x_line_number", "expect_compound_columns_to_be_unique"),
    }
    # both copies of the repeated line are unexpected
    assert counts(result)[
        ("x_source_file,x_line_number", "expect_compound_columns_to_be_unique")
    ].startswith("2 rows")


def test_power_readings_keys_and_kinds_agree(tmp_path: Path) -> None:
    f = tmp_path / "meters.csv"
    f.write_text(
        "timestamp,site,meter,kind,kw\n"
        "2026-10-02T00:00:00Z,dc1,main,facility,120.5\n"
        "2026-10-02T00:00:00Z,dc1,pdu-a,it,80\n"
        "2026-10-02T00:15:00Z,dc1,main,facility,121\n"
        "2026-10-02T00:15:00Z,dc1,pdu-a,it,81\n"
    )
    rows = read_power(f, source="meters").rows
    assert both(prepare(rows, "power_readings"), "power_readings", DAY).passed
    broken = pl.concat([rows.with_columns(kind=pl.lit("chiller")), rows.head(1)])
    result = both(prepare(broken, "power_readings"), "power_readings", DAY)
    assert counts(result) == {
        ("kind", "expect_column_values_to_be_in_set"): "4 rows (80 %)",  # 4 of 5 rows
        ("site,meter,time", "expect_compound_columns_to_be_unique"): "2 rows (40 %)",
        # the repeated 00:00 reading of main, after 00:15: time goes back (1 of 5)
        ("x_time_increasing", "expect_column_values_to_be_in_set"): "1 rows (20 %)",
    }


def test_billing_currency_month_order_and_nulls_agree(tmp_path: Path) -> None:
    from billing.test_gcp_billing_files import CSV_2020, gcp_samples

    cfg = Config.model_validate(
        {
            "sources": [
                {"name": "gcp", "kind": "gcp_billing", "location": str(gcp_samples() / CSV_2020)}
            ]
        }
    )
    ingest_source(cfg, cfg.source("gcp"), [date(2020, 11, 9)], tmp_path)
    df = pl.read_parquet(tmp_path / "raw/gcp_billing_lines/gcp/period=2020-11/part-0.parquet")
    assert both(df, "gcp_billing_lines", "period=2020-11").passed
    line = pl.col("x_line_number")
    broken = df.with_columns(
        currency=pl.when(line == 2).then(pl.lit("usd")).otherwise("currency"),
        invoice_month=pl.when(line == 3).then(pl.lit("202012")).otherwise("invoice_month"),
        x_source=pl.when(line == 4).then(None).otherwise("x_source"),
        usage_start_time=pl.when(line == 5)
        .then(pl.col("usage_start_time") + pl.duration(days=40))
        .otherwise("usage_start_time"),
    )
    result = both(broken, "gcp_billing_lines", "period=2020-11")
    # 25 lines, one broken per rule: 1 of 25 = 4 %
    assert counts(result) == {
        ("currency", "expect_column_values_to_be_in_set"): "1 rows (4 %)",
        ("invoice_month", "expect_column_values_to_be_in_set"): "1 rows (4 %)",
        ("x_source", "expect_column_values_to_not_be_null"): "1 rows (4 %)",
        # its start moved 40 days on, after its end
        ("usage_end_time", "expect_column_pair_values_a_to_be_greater_than_b"): "1 rows (4 %)",
    }


def test_large_partitions_take_the_polars_route(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    suite = suite_for("dcgm_samples")
    assert pick_route(suite, 50_000) == "gx"
    assert pick_route(suite, 50_001) == "polars"
    monkeypatch.setenv("FLEETLEDGER_QUALITY_GX_MAX_ROWS", "10")
    assert pick_route(suite, 20) == "polars"
    # a landed partition above the limit is read with its text as categoricals, and validated
    # as Great Expectations validates the text
    late = T0 + timedelta(minutes=10)
    bad = [
        {"time": late, "host": None, "metric": "DCGM_FI_DEV_GPU_UTIL", "value": 101.0, "line": 90},
        {"time": T0, "host": "a01", "metric": "DCGM_FI_DEV_SM_CLOCK", "value": 1.0, "line": 91},
    ]
    for name, rows in (("good", GOOD), ("bad", GOOD + bad)):
        land(tmp_path, "dcgm_samples", name, DAY, _dcgm(rows))
        path = tmp_path / "raw/dcgm_samples" / name / DAY / "part-0.parquet"
        assert read_partition(path, suite).schema["host"] == pl.Categorical
        landed = validate_landed(tmp_path, "dcgm_samples", name, DAY)
        gx = validate_frame(
            prepare(pl.read_parquet(path), "dcgm_samples"), "dcgm_samples", DAY, route="gx"
        )
        assert (landed.rows, landed.expectations) == (len(rows), 46)
        assert counts(landed) == counts(gx)
        assert landed.passed == (name == "good")
    # 22 rows: the host-less one (1 of 22); 101 % (1 of the 6 GPU_UTIL values); the SM clock
    # at T0 after later ones of its series (1 of 22)
    assert counts(landed) == {
        ("host", "expect_column_values_to_not_be_null"): "1 rows (4.55 %)",
        ("value_percent_metrics", "expect_column_values_to_be_between"): "1 rows (16.7 %)",
        ("x_time_increasing", "expect_column_values_to_be_in_set"): "1 rows (4.55 %)",
    }


def test_columns_no_rule_reads_are_checked_on_the_files_schema(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The polars route reads the values of the columns the rules read only; the others are
    still checked as the file has them: a mistyped one fails its type rule, a missing one its
    existence rule, as Great Expectations finds over the whole file."""
    monkeypatch.setenv("FLEETLEDGER_QUALITY_GX_MAX_ROWS", "10")
    read = landed_columns_read("dcgm_samples", DAY)
    assert {"model_name", "container"} - read == {"model_name", "container"}
    assert {"time", "host", "gpu", "uuid", "metric", "value", "hpc_job"} <= read
    late = T0 + timedelta(minutes=10)
    rows = [*GOOD, {"time": late, "host": None, "metric": "DCGM_FI_DEV_GPU_UTIL", "value": 101.0}]
    frame = (
        _dcgm([{**r, "line": r.get("line", 99)} for r in rows])
        .with_columns(pl.lit(7, dtype=pl.Int64).alias("model_name"))
        .drop("container")
    )
    path = tmp_path / "raw/dcgm_samples/s" / DAY / "part-0.parquet"
    path.parent.mkdir(parents=True)
    frame.write_parquet(path)
    landed = validate_landed(tmp_path, "dcgm_samples", "s", DAY)
    gx = validate_frame(
        prepare(pl.read_parquet(path), "dcgm_samples"), "dcgm_samples", DAY, route="gx"
    )
    assert (
        sorted(counts(landed))
        == sorted(counts(gx))
        == [
            ("container", "expect_column_to_exist"),
            ("host", "expect_column_values_to_not_be_null"),
            ("model_name", "expect_column_values_to_be_of_type"),
            ("value_percent_metrics", "expect_column_values_to_be_between"),
        ]
    )
    assert {k: v for k, v in counts(landed).items() if "rows" in v} == {
        k: v for k, v in counts(gx).items() if "rows" in v
    }
