"""Quality suites of the telemetry landings (ingest/core/quality_landed.py, Great Expectations):
the real samples pass; ranges, monotonic time and keys fail where broken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl

from ingest.core.landing import land, polars_schema
from ingest.core.quality import validate_frame
from ingest.core.quality_landed import prepare, quarantine_counts, validate_landed
from ingest.telemetry.power import read_power

GPU09 = "power/cornell-biohpc-cbsugpu09-hourly-gpu-power-util-full.tsv"


def failures(result: object) -> list[tuple[str | None, str]]:
    return sorted((f.column, f.expectation.split("(")[0]) for f in result.failures)  # type: ignore[attr-defined]


def test_rollup_sample_passes_and_broken_rows_fail(samples: Path, tmp_path: Path) -> None:
    rows = read_power(samples / GPU09, source="cornell", options={"format": "node_gpu_rollup"}).rows
    day = rows.filter(pl.col("time").dt.date() == datetime(2025, 3, 9).date())
    assert day.height == 22  # 01:00 and 02:00 are missing from the export that day
    land(tmp_path, "node_gpu_power_hourly", "cornell", "date=2025-03-09", day)
    ok = validate_landed(tmp_path, "node_gpu_power_hourly", "cornell", "date=2025-03-09")
    assert ok.passed, ok.summary()
    assert ok.rows == 22

    broken = pl.concat(
        [
            day.with_columns(
                util_max=pl.when(pl.col("x_line_number") == day["x_line_number"][0])
                .then(120.0)
                .otherwise(pl.col("util_max")),
                power_min_w=pl.when(pl.col("x_line_number") == day["x_line_number"][1])
                .then(-5.0)
                .otherwise(pl.col("power_min_w")),
            ),
            day.tail(1),  # the last hour again, after it: time goes backwards for the host
        ]
    )
    bad = validate_frame(
        prepare(broken, "node_gpu_power_hourly"), "node_gpu_power_hourly", "date=2025-03-09"
    )
    assert failures(bad) == [
        ("host,time", "expect_compound_columns_to_be_unique"),
        ("power_min_w", "expect_column_values_to_be_between"),
        ("util_max", "expect_column_values_to_be_between"),
        ("x_time_increasing", "expect_column_values_to_be_in_set"),
    ]


def test_dcgm_ranges_by_metric_and_monotonic_series() -> None:
    t0 = datetime(2026, 10, 2, 12, tzinfo=UTC)
    metrics = [
        ("DCGM_FI_DEV_GPU_UTIL", 87.0),
        ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.87),
        ("DCGM_FI_DEV_POWER_USAGE", 412.5),
        ("DCGM_FI_DEV_SM_CLOCK", 1980.0),  # not a ratio: above 1 is fine
        ("DCGM_FI_PROF_PCIE_TX_BYTES", 3.2e9),  # bytes/s, no range
    ]
    rows = [
        {"time": t0 + timedelta(seconds=30 * i), "metric": m, "value": v, "line": i * 10 + j}
        for i in range(3)
        for j, (m, v) in enumerate(metrics)
    ]
    schema = polars_schema("dcgm_samples")
    given = {
        "host": pl.lit("gpu-a01"),
        "gpu": pl.lit(0),
        "uuid": pl.lit("GPU-1"),
        "x_source": pl.lit("dcgm"),
        "x_source_file": pl.lit("f.prom"),
        "x_line_number": pl.col("line"),
    }

    def frame(extra: list[dict]) -> pl.DataFrame:
        df = pl.DataFrame(rows + extra)
        return df.select(
            (given.get(c, pl.col(c)) if c in given or c in df.columns else pl.lit(None))
            .cast(t)
            .alias(c)
            for c, t in schema.items()
        )

    ok = validate_frame(prepare(frame([]), "dcgm_samples"), "dcgm_samples", "date=2026-10-02")
    assert ok.passed, ok.summary()
    t_late = t0 + timedelta(minutes=5)
    bad_rows = [
        {"time": t_late, "metric": "DCGM_FI_DEV_GPU_UTIL", "value": 101.0, "line": 100},
        {"time": t_late, "metric": "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "value": 1.5, "line": 101},
        {"time": t_late, "metric": "DCGM_FI_DEV_POWER_USAGE", "value": -1.0, "line": 102},
        # an older sample of the same series after a newer one
        {"time": t0, "metric": "DCGM_FI_DEV_SM_CLOCK", "value": 1980.0, "line": 103},
    ]
    bad = validate_frame(
        prepare(frame(bad_rows), "dcgm_samples"), "dcgm_samples", "date=2026-10-02"
    )
    assert failures(bad) == [
        ("value_non_negative_metrics", "expect_column_values_to_be_between"),
        ("value_percent_metrics", "expect_column_values_to_be_between"),
        ("value_ratio_metrics", "expect_column_values_to_be_between"),
        ("x_time_increasing", "expect_column_values_to_be_in_set"),
    ]

    # a large landed partition's text is read as categoricals for the polars route
    # (ingest/core/quality.py, `read_partition`): the same failures; and a second GPU's series
    # interleaved with the first, 10 s earlier at every scrape, is increasing on its own
    def categorical(df: pl.DataFrame) -> pl.DataFrame:
        return df.with_columns(pl.col(pl.String).cast(pl.Categorical))

    cat_bad = prepare(categorical(frame(bad_rows)), "dcgm_samples")
    cat_result = validate_frame(cat_bad, "dcgm_samples", "date=2026-10-02", route="polars")
    assert failures(cat_result) == failures(bad)
    one = frame([]).with_columns(order=2 * pl.col("x_line_number"))
    two = one.with_columns(
        uuid=pl.lit("GPU-2"),
        time=pl.col("time") - timedelta(seconds=10),
        order=pl.col("order") + 1,
    )
    interleaved = categorical(pl.concat([one, two]).sort("order").drop("order"))
    both = validate_frame(
        prepare(interleaved, "dcgm_samples"), "dcgm_samples", "date=2026-10-02", route="polars"
    )
    assert both.passed, both.summary()


def test_meter_kinds_and_quarantine_counts(tmp_path: Path) -> None:
    csv = (
        "timestamp,site,meter,kind,kw\n"
        "2026-10-02T00:00:00Z,dc1,main,facility,120.5\n"
        "2026-10-02T00:00:00Z,dc1,pdu-a,it,80\n"
        "2026-10-02T00:15:00Z,dc1,main,facility,121\n"
        "2026-10-02T00:15:00Z,dc1,pdu-a,chiller,3\n"
        "2026-10-02T00:30:00Z,dc1,main,facility,-1\n"
    )
    f = tmp_path / "meters.csv"
    f.write_text(csv)
    r = read_power(f, source="meters")
    land(tmp_path, "power_readings", "meters", "date=2026-10-02", r.rows)
    from ingest.core.landing import land_quarantine

    land_quarantine(tmp_path, "meters", "date=2026-10-02", r.quarantine)
    ok = validate_landed(tmp_path, "power_readings", "meters", "date=2026-10-02")
    assert ok.passed, ok.summary()
    assert quarantine_counts(tmp_path, "meters", "date=2026-10-02") == {
        "kind must be facility or it, got chiller": 1,
        "kw is negative": 1,
    }
    assert quarantine_counts(tmp_path, "meters", "date=2026-10-03") == {}
    # a reading in a kind the reader would have rejected, landed anyway, fails the suite
    sneaked = r.rows.with_columns(kind=pl.lit("chiller"))
    bad = validate_frame(prepare(sneaked, "power_readings"), "power_readings", "date=2026-10-02")
    assert failures(bad) == [("kind", "expect_column_values_to_be_in_set")]
