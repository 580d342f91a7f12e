"""Quality suites of the scheduler landings, and the Dagster asset checks beside the scheduler
and telemetry ingest assets (quarantine counted in their metadata)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import yaml

from ingest.core.quality import validate_frame
from ingest.core.quality_landed import prepare
from ingest.scheduler.kubernetes_ksm import parse_ksm
from ingest.scheduler.kueue import parse_workloads
from ingest.scheduler.slurm import read_sacct

HB = "slurm/hb-jobinfo-sacct-snowman-delim-gpu-steps.txt"
GPU09 = "power/cornell-biohpc-cbsugpu09-hourly-gpu-power-util-full.tsv"
HB_OPTIONS = {
    "delimiter": "☃",
    "columns": (
        "JobID,JobName,User,Partition,NodeList,NNodes,NCPUs,NTasks,State,Submit,Start,End,"
        "Timelimit,Elapsed,TotalCPU,CPUTime,UserCPU,SystemCPU,ReqMem,MaxRSS,MaxVMSize,ReqTRES,"
        "AllocTRES,TRESUsageInMax,TRESUsageInTot,TRESUsageOutTot,MaxDiskRead,MaxDiskWrite,"
        "MaxRSSNode,MaxRSSTask,MaxVMSizeNode,MaxVMSizeTask,MaxDiskReadNode,MaxDiskReadTask,"
        "MaxDiskWriteNode,MaxDiskWriteTask,Comment"
    ).split(","),
}


def failures(result: object) -> list[tuple[str | None, str]]:
    return sorted((f.column, f.expectation.split("(")[0]) for f in result.failures)  # type: ignore[attr-defined]


def check(df: pl.DataFrame, table: str) -> object:
    return validate_frame(prepare(df, table), table, "date=2024-04-19", source="s")


def test_slurm_sample_passes_and_broken_rows_fail(samples: Path) -> None:
    rows = read_sacct(samples / HB, source="hb", options=HB_OPTIONS).rows
    ok = check(rows, "slurm_jobs")
    assert ok.passed, ok.summary()  # type: ignore[attr-defined]
    first = pl.col("x_line_number") == rows["x_line_number"][0]
    broken = rows.with_columns(
        state=pl.when(first).then(pl.lit("EXPLODED")).otherwise(pl.col("state")),
        gpus=pl.when(first).then(-1).otherwise(pl.col("gpus")),
        end=pl.when(first).then(pl.col("start") - pl.duration(hours=1)).otherwise(pl.col("end")),
    )
    assert failures(check(broken, "slurm_jobs")) == [
        ("end", "expect_column_pair_values_a_to_be_greater_than_b"),
        ("gpus", "expect_column_values_to_be_between"),
        ("state", "expect_column_values_to_be_in_set"),
    ]


def test_kueue_and_ksm_suites() -> None:
    # the fixtures of the reader tests beside this file
    from test_sched_ksm import TEXT as KSM_TEXT
    from test_sched_kueue import WORKLOADS

    snap = datetime(2024, 7, 1, 23, 59, 59, tzinfo=UTC)
    wl = parse_workloads({"items": WORKLOADS}, source="k", file="w.json", snapshot_at=snap).rows
    ok = check(wl, "kueue_workloads")
    assert ok.passed, ok.summary()  # type: ignore[attr-defined]
    broken = wl.with_columns(evicted_count=pl.lit(-1, pl.Int64))
    assert failures(check(broken, "kueue_workloads")) == [
        ("evicted_count", "expect_column_values_to_be_between")
    ]
    req = parse_ksm(KSM_TEXT.encode(), source="k", file="f", default_time=snap).rows
    ok = check(req, "k8s_gpu_requests")
    assert ok.passed, ok.summary()  # type: ignore[attr-defined]
    # the same pod's request again, an hour earlier, after the later one: time goes backwards
    back = pl.concat([req, req.head(1).with_columns(pl.col("time") - pl.duration(hours=1))])
    assert failures(check(back, "k8s_gpu_requests")) == [
        ("x_time_increasing", "expect_column_values_to_be_in_set")
    ]


def test_asset_checks_beside_ingest_assets(samples: Path, tmp_path: Path) -> None:
    from dagster import materialize

    from fleetledger.config import load_config
    from orchestration.checks import source_checks
    from orchestration.ingest_assets import build_ingest_assets
    from orchestration.resources import FleetResource

    home = tmp_path / "home"
    home.mkdir()
    sources = [
        {
            "name": "hb",
            "kind": "slurm",
            "location": str(samples / HB),
            "options": {**HB_OPTIONS, "snapshot_date": "2025-03-09"},
        },
        {
            "name": "odd",
            "kind": "slurm",
            "location": str(samples / "slurm/xdmod-unknown-job-state.log"),
            "options": {"snapshot_date": "2025-03-09"},
        },
        {
            "name": "rollup",
            "kind": "power",
            "location": str(samples / GPU09),
            "options": {"format": "node_gpu_rollup"},
        },
    ]
    (home / "fleetledger.yml").write_text(yaml.safe_dump({"sources": sources}))
    cfg = load_config(home / "fleetledger.yml")
    defs = [*build_ingest_assets(cfg), *source_checks(cfg)]
    result = materialize(
        defs,
        partition_key="2025-03-09",
        resources={"fleet": FleetResource(home=str(home))},
        raise_on_error=False,
    )
    assert result.success
    all_evals = result.get_asset_check_evaluations()
    # every source could be read (its ingest asset's own check)
    available = {e.asset_key.path[-1] for e in all_evals if e.check_name == "source_available"}
    assert available == {"hb", "odd", "rollup"}
    assert all(e.passed for e in all_evals if e.check_name == "source_available")
    evals = {e.asset_key.path[-1]: e for e in all_evals if e.check_name == "landing_expectations"}
    assert set(evals) == {"hb", "odd", "rollup"}
    assert all(e.passed for e in evals.values())
    assert not any(e.blocking for e in evals.values())
    hb = evals["hb"].metadata
    assert (hb["rows"].value, hb["quarantined_rows"].value) == (100, 0)
    odd = evals["odd"]
    assert (odd.metadata["rows"].value, odd.metadata["quarantined_rows"].value) == (0, 2)
    assert odd.description.endswith("; 2 rows quarantined")
    assert "1 × unknown state 'BAR'" in odd.metadata["quarantine_reasons"].value
    rollup = evals["rollup"].metadata
    assert rollup["rows"].value == 22  # the hours of 2025-03-09 in the export
    assert rollup["partitions"].value == "- date=2025-03-09"
