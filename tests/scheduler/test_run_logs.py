"""Job log files → checkpoint markers (ingest/scheduler/run_logs.py), landed by day
(ingest/scheduler/landing.py).

Every expected time below is worked out by hand from the line it comes from."""

from __future__ import annotations

import gzip
from datetime import UTC, date, datetime
from pathlib import Path

import polars as pl
import pytest

from fleetledger.config import Config, Source
from ingest.core.errors import IngestError
from ingest.registry import ingest_source
from ingest.scheduler.run_logs import RunLogOptions, parse_log_time, read_run_log

SLURM = {"scheduler": "slurm", "cluster": "onprem"}
K8S = {"scheduler": "kubernetes", "cluster": "gke-ml"}


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)  # type: ignore[misc]


def write(path: Path, lines: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


HF_LOG = [
    "+ srun python train.py --config moe.yaml",  # 1: shell trace, no time
    "2026-10-02 09:00:01,004 - INFO - __main__ - Loading checkpoint shards: 100%",  # 2
    "2026-10-02 09:12:40,250 - INFO - transformers.trainer - {'loss': 2.31, 'step': 100}",  # 3
    "2026-10-02 09:30:05,123 - INFO - transformers.trainer - Saving model checkpoint to "
    "/ckpt/moe/checkpoint-500",  # 4: marker
    "2026-10-02 10:01:17,900 - INFO - transformers.trainer - Resuming from checkpoint x",  # 5
    "2026-10-02 10:02:00,000 - INFO - transformers.trainer - Saving model checkpoint to "
    "/ckpt/moe/checkpoint-1000",  # 6: marker
    "Saving model checkpoint to /ckpt/moe/checkpoint-1500",  # 7: marker without a time
    "2026-10-03 00:00:09,001 - INFO - transformers.trainer - Saving model checkpoint to "
    "/ckpt/moe/checkpoint-2000",  # 8: marker, next day
]


def test_hugging_face_trainer_markers_and_a_marker_without_time(tmp_path: Path) -> None:
    f = write(tmp_path / "logs" / "slurm-88001.out", HF_LOG)
    res = read_run_log(f, source="logs", options=SLURM)
    rows = res.rows.sort("x_line_number")
    assert rows["x_line_number"].to_list() == [4, 6, 8]
    assert rows["checkpoint_at"].to_list() == [
        utc(2026, 10, 2, 9, 30, 5, 123000),
        utc(2026, 10, 2, 10, 2, 0),
        utc(2026, 10, 3, 0, 0, 9, 1000),
    ]
    assert set(rows["job_id_raw"]) == {"88001"}
    assert rows["job_id"].to_list() == [None] * 3
    assert set(rows["scheduler"]) == {"slurm"} and set(rows["cluster"]) == {"onprem"}
    assert set(rows["x_source_file"]) == {str(f)}
    assert rows["message"][0].endswith("Saving model checkpoint to /ckpt/moe/checkpoint-500")
    # line 7 has no time: quarantined with file and line, the rest of the file still landed
    q = res.quarantine
    assert q.select("x_source_file", "x_line_number", "reason").rows() == [
        (str(f), 7, "checkpoint marker without a time (option timestamp)")
    ]


def test_lightning_deepspeed_megatron_and_offsets(tmp_path: Path) -> None:
    f = write(
        tmp_path / "slurm-7.out",
        [
            # Lightning ModelCheckpoint (verbose) through a logging format with an offset
            "[2026-10-02T13:04:05.5+02:00] INFO Epoch 3, global step 1200: 'val_loss' reached "
            "0.51 (best 0.51), saving model to '/ckpt/epoch=3-step=1200.ckpt' as top 3",
            "[2026-10-02T13:05:00+02:00] INFO Epoch 3, global step 1300: 'val_loss' was not in "
            "top 3",
            "2026-10-02T12:00:00Z [Torch] Checkpoint global_step1500 is ready now!",
            "2026-10-02 12:30:00 UTC  successfully saved checkpoint at iteration 2000 to /ckpt",
            "2026-10-02 13:00:00-0500 CHECKPOINT SAVED step=2100",
        ],
    )
    rows = read_run_log(f, source="logs", options=SLURM).rows
    assert rows["x_line_number"].to_list() == [1, 3, 4, 5]
    assert rows["checkpoint_at"].to_list() == [
        utc(2026, 10, 2, 11, 4, 5, 500000),
        utc(2026, 10, 2, 12, 0, 0),
        utc(2026, 10, 2, 12, 30, 0),
        utc(2026, 10, 2, 18, 0, 0),
    ]


def test_kubectl_timestamps_prefix_wins_over_the_app_time(tmp_path: Path) -> None:
    f = write(
        tmp_path / "pods" / "data-eng" / "embed-batch-002.log",
        [
            "2026-10-02T11:04:05.123456789Z 2026-10-02 13:04:05,000 INFO step 10",
            "2026-10-02T11:34:05.987654321Z 2026-10-02 13:34:05,000 INFO Saved checkpoint "
            "shard-0003",
            "2026-10-02T12:04:05.000000001+01:00 checkpoint saved to gs://b/x",
        ],
    )
    res = read_run_log(f, source="pods", options=K8S)
    assert res.rows.select("namespace", "pod", "job_id_raw", "x_line_number").rows() == [
        ("data-eng", "embed-batch-002", None, 2),
        ("data-eng", "embed-batch-002", None, 3),
    ]
    # nanoseconds are cut to microseconds; the offset is applied
    assert res.rows["checkpoint_at"].to_list() == [
        utc(2026, 10, 2, 11, 34, 5, 987654),
        utc(2026, 10, 2, 11, 4, 5, 0),
    ]


def test_naive_times_in_the_timezone_option(tmp_path: Path) -> None:
    f = write(
        tmp_path / "slurm-5.out",
        [
            "2026-10-02 11:00:00,250 INFO Saving model checkpoint to /c/checkpoint-1",  # CEST
            "2026-11-02 11:00:00,250 INFO Saving model checkpoint to /c/checkpoint-2",  # CET
            # the hour repeated on 2026-10-25 (02:00-03:00 local twice): the first of the two
            "2026-10-25 02:30:00 INFO Saving model checkpoint to /c/checkpoint-3",
            # an explicit offset is not re-zoned
            "2026-10-02T11:00:00Z INFO Saving model checkpoint to /c/checkpoint-4",
        ],
    )
    rows = read_run_log(f, source="s", options={**SLURM, "timezone": "Europe/Berlin"}).rows
    assert rows["checkpoint_at"].to_list() == [
        utc(2026, 10, 2, 9, 0, 0, 250000),
        utc(2026, 11, 2, 10, 0, 0, 250000),
        utc(2026, 10, 25, 0, 30, 0),
        utc(2026, 10, 2, 11, 0, 0),
    ]


def test_hugging_face_example_date_format_and_strptime_option(tmp_path: Path) -> None:
    # the transformers examples log with datefmt="%m/%d/%Y %H:%M:%S"
    f = write(
        tmp_path / "slurm-9.out",
        ["10/02/2026 11:04:05 - INFO - transformers.trainer - Saving model checkpoint to /c/x"],
    )
    assert read_run_log(f, source="s", options=SLURM).rows["checkpoint_at"].to_list() == [
        utc(2026, 10, 2, 11, 4, 5)
    ]
    g = write(tmp_path / "slurm-10.out", ["[02.10.2026 11:04] checkpoint saved"])
    opts = {
        **SLURM,
        "timestamp": r"^\[(?P<ts>[^\]]+)\]",
        "timestamp_format": "%d.%m.%Y %H:%M",
        "timezone": "Asia/Tokyo",
    }
    assert read_run_log(g, source="s", options=opts).rows["checkpoint_at"].to_list() == [
        utc(2026, 10, 2, 2, 4, 0)
    ]
    bad = write(tmp_path / "slurm-11.out", ["2026-13-02 11:04:05 checkpoint saved"])
    q = read_run_log(bad, source="s", options=SLURM).quarantine
    assert q["reason"].to_list() == [
        "checkpoint marker with an unparseable time '2026-13-02 11:04:05'"
    ]


def test_array_task_files_gzip_and_progress_bars(tmp_path: Path) -> None:
    f = tmp_path / "slurm-41005_3.out.gz"
    text = (
        " 10%|#         | 10/100 [00:01<00:09]\r 20%|##        | 20/100 [00:02<00:08]\r"
        "2026-10-02 08:00:00,500 - INFO - Saving model checkpoint to /c/checkpoint-20\n"
        "2026-10-02 08:00:00,600 - INFO - done\n"
    )
    f.write_bytes(gzip.compress(text.encode()))
    rows = read_run_log(f, source="s", options=SLURM).rows
    assert rows.select("job_id", "job_id_raw", "x_line_number").rows() == [("41005_3", None, 1)]
    assert rows["checkpoint_at"].to_list() == [utc(2026, 10, 2, 8, 0, 0, 500000)]


def test_file_matching_no_job_quarantines_its_markers(tmp_path: Path) -> None:
    f = write(
        tmp_path / "train.out",
        [
            "2026-10-02 08:00:00,000 INFO step 1",
            "2026-10-02 08:30:00,000 INFO Saving model checkpoint to /c/checkpoint-1",
        ],
    )
    res = read_run_log(f, source="s", options=SLURM)
    assert res.rows.height == 0
    assert res.quarantine.select("x_line_number", "reason", "x_partition_day").rows() == [
        (
            2,
            "checkpoint marker in a file whose path matches no job (option job_from_path)",
            date(2026, 10, 2),
        )
    ]
    assert res.warnings == [f"{f}: path matches no job (option job_from_path)"]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"cluster": "c"}, "option scheduler: expected one of slurm, kubernetes, got None"),
        ({"scheduler": "slurm"}, "option cluster: required"),
        ({**SLURM, "job_from_path": r"job-(\d+)"}, "needs a named group job_id_raw"),
        ({**K8S, "job_from_path": r"(?P<pod>.+)\.log"}, "needs named groups namespace and pod"),
        ({**SLURM, "marker": "save("}, "option marker: invalid regex"),
        ({**SLURM, "timestamp": r"\d+"}, "has no group named ts"),
        ({**SLURM, "timezone": "Mars/Olympus"}, "option timezone: unknown time zone"),
        ({**SLURM, "markers": "x"}, "unknown option(s) markers"),
    ],
)
def test_options_are_validated(options: dict, message: str) -> None:
    with pytest.raises(IngestError, match="^source logs: ") as err:
        RunLogOptions.parse(options, "logs")
    assert message in str(err.value)


def test_parse_log_time_forms() -> None:
    from zoneinfo import ZoneInfo

    z = ZoneInfo("UTC")
    assert parse_log_time("2026-10-02T11:04:05.123456789Z", z) == utc(2026, 10, 2, 11, 4, 5, 123456)
    assert parse_log_time("2026-10-02 11:04:05,1", z) == utc(2026, 10, 2, 11, 4, 5, 100000)
    assert parse_log_time("2026-10-02T11:04:05+0530", z) == utc(2026, 10, 2, 5, 34, 5)


def _config(root: Path, location: str, options: dict) -> Config:
    return Config(
        sources=[Source(name="logs", kind="run_logs", location=location, options=options)],
        base_dir=root,
    )


def test_landing_by_checkpoint_day_and_relanding_replaces(tmp_path: Path) -> None:
    src = tmp_path / "src"
    write(src / "slurm-88001.out", HF_LOG)
    write(src / "notes" / "train.out", ["2026-10-02 08:30:00,000 INFO checkpoint saved"])
    cfg = _config(tmp_path, "src/**/*.out", SLURM)
    home = tmp_path / "home"
    d2, d3 = date(2026, 10, 2), date(2026, 10, 3)
    for _ in range(2):  # the second run replaces, never appends
        report = ingest_source(cfg, cfg.source("logs"), [d2, d3], home)
        assert (report.table, report.rows_landed, report.rows_quarantined) == (
            "run_log_checkpoints",
            3,
            2,
        )
    raw = home / "raw" / "run_log_checkpoints" / "logs"
    day2 = pl.read_parquet(raw / "date=2026-10-02" / "part-0.parquet")
    day3 = pl.read_parquet(raw / "date=2026-10-03" / "part-0.parquet")
    assert day2["x_line_number"].to_list() == [4, 6]
    assert day3["x_line_number"].to_list() == [8]
    q2 = pl.read_parquet(
        home / "raw" / "quarantine" / "logs" / "date=2026-10-02" / "part-0.parquet"
    )
    # the marker without a time goes with its file's markers (most on 10-02); the marker of a
    # file matching no job goes to its own day
    assert sorted(q2.select("x_source_file", "x_line_number").rows()) == [
        (str(src / "notes" / "train.out"), 1),
        (str(src / "slurm-88001.out"), 7),
    ]
    assert any("1 files match no job" in str(w) for w in report.warnings)
    # a later run of one day replaces that day only
    write(src / "slurm-88001.out", HF_LOG[:4])
    report = ingest_source(cfg, cfg.source("logs"), [d2], home)
    assert report.rows_landed == 1
    assert pl.read_parquet(raw / "date=2026-10-02" / "part-0.parquet").height == 1
    assert pl.read_parquet(raw / "date=2026-10-03" / "part-0.parquet").height == 1


def test_location_with_date_placeholder_is_refused(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "logs/{date}/*.out", SLURM)
    with pytest.raises(IngestError, match=r"source logs: a run_logs location .*read whole"):
        ingest_source(cfg, cfg.source("logs"), [date(2026, 10, 2)], tmp_path / "home")


def test_bad_options_fail_the_ingest_naming_the_source(tmp_path: Path) -> None:
    cfg = _config(tmp_path, "logs/*.out", {"scheduler": "pbs", "cluster": "c"})
    with pytest.raises(IngestError, match="source logs: option scheduler"):
        ingest_source(cfg, cfg.source("logs"), [date(2026, 10, 2)], tmp_path / "home")


def test_landing_suite_passes_and_flags_a_marker_of_another_day(tmp_path: Path) -> None:
    from ingest.core.quality import validate_frame
    from ingest.core.quality_landed import TABLES  # registers the suites

    assert "run_log_checkpoints" in TABLES

    f = write(tmp_path / "slurm-88001.out", HF_LOG)
    rows = read_run_log(f, source="s", options=SLURM).rows
    day2 = rows.filter(pl.col("checkpoint_at").dt.date() == date(2026, 10, 2))
    ok = validate_frame(day2, "run_log_checkpoints", "date=2026-10-02", source="s")
    assert ok.passed, ok.summary()
    bad = validate_frame(rows, "run_log_checkpoints", "date=2026-10-02", source="s")
    assert sorted({f.column for f in bad.failures}) == ["checkpoint_at"]
