"""The sacct reader on what schedulers really print (issue 12, items 4, 7, 8, 9): MIG GRES,
local times across daylight-saving changes, pending array ranges and the order of undated
exports. The marts' figures for the same cases are in tests/test_slurm_as_reported.py."""

from __future__ import annotations

import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleetledger.config import Config, Source
from ingest.core.findings import IngestFinding
from ingest.registry import ingest_source
from ingest.scheduler.slurm import parse_sacct
from ingest.scheduler.slurm_gres import GpuRequest, gpu_request_from_gres, gpu_request_from_tres

COLUMNS = ["jobid", "jobidraw", "state", "submit", "start", "end", "elapsed", "alloctres"]


def parse(lines: list[str], **options: object):
    text = "\n".join(["|".join(COLUMNS), *lines])
    return parse_sacct(text, source="s", file="sacct.txt", options=dict(options))


def findings(result) -> list[tuple[str, str, int]]:
    return [(w.check, w.severity, w.count) for w in result.warnings if isinstance(w, IngestFinding)]


@pytest.mark.parametrize(
    ("tres", "expected"),
    [
        # the untyped entry counts the MIG instance too: no whole GPU, one 1g.10gb (1 slice)
        ("cpu=1,gres/gpu:1g.10gb=1,gres/gpu=1,mem=8G,node=1", GpuRequest(0, 1, 1, "1g.10gb")),
        # two 3g.40gb instances (6 slices) and one whole H100 among 3 devices
        ("gres/gpu:3g.40gb=2,gres/gpu:h100=1,gres/gpu=3", GpuRequest(1, 2, 6, "3g.40gb")),
        # no untyped entry: typed entries summed, MIG apart; two profiles: no single profile
        ("gres/gpu:1g.10gb+me=1,gres/gpu:2g.20gb=1", GpuRequest(0, 2, 3, None)),
        ("gres/gpu:h100=4,gres/gpu=4", GpuRequest(4)),
        ("gres/gpu=8", GpuRequest(8)),
    ],
)  # fmt: skip
def test_mig_gres_in_tres(tres: str, expected: GpuRequest) -> None:
    assert gpu_request_from_tres(tres) == expected


def test_mig_gres_in_old_style_gres() -> None:
    assert gpu_request_from_gres("gpu:1g.10gb:2(IDX:0-1)") == GpuRequest(0, 2, 2, "1g.10gb")
    assert gpu_request_from_gres("gpu:P100:2(IDX:1,3),hbm:0") == GpuRequest(2)
    assert gpu_request_from_tres("cpu=1,mem=1G") is None


def test_a_mig_job_lands_its_instances_not_a_whole_gpu() -> None:
    r = parse(["601|601|COMPLETED|2026-11-01T00:00:00|2026-11-01T00:00:00|"
               "2026-11-01T02:00:00|02:00:00|cpu=1,gres/gpu:1g.10gb=1,gres/gpu=1"])  # fmt: skip
    row = r.rows.select("gpus", "mig_instances", "mig_slices", "mig_profile").row(0)
    assert row == (0, 1, 1, "1g.10gb")


def test_an_ambiguous_end_is_resolved_with_elapsed() -> None:
    """01:50 EDT = 05:50Z; 01:10 on 2026-11-01 in New York is 05:10Z (EDT) or 06:10Z (EST):
    Elapsed 00:20:00 picks 06:10Z (End - Start = 20 min). Before: 05:10Z, before the Start."""
    r = parse(["900|900|COMPLETED|2026-11-01T01:00:00|2026-11-01T01:50:00|"
               "2026-11-01T01:10:00|00:20:00|gres/gpu=8"], timezone="America/New_York")  # fmt: skip
    assert r.quarantine.height == 0
    assert r.rows.select("start", "end").row(0) == (
        datetime(2026, 11, 1, 5, 50, tzinfo=UTC),
        datetime(2026, 11, 1, 6, 10, tzinfo=UTC),
    )
    assert findings(r) == [("slurm_ambiguous_time_resolved", "info", 1)]


def test_an_ambiguous_start_is_resolved_with_elapsed() -> None:
    """Start 01:30 is 05:30Z or 06:30Z; End 02:00 EST is 07:00Z; Elapsed 00:30:00 picks the
    second reading, 06:30Z. Submit 01:20 (05:20Z or 06:20Z): both before the Start, so the
    first reading, 05:20Z, and a warning that it was guessed."""
    r = parse(["901|901|COMPLETED|2026-11-01T01:20:00|2026-11-01T01:30:00|"
               "2026-11-01T02:00:00|00:30:00|gres/gpu=1"], timezone="America/New_York")  # fmt: skip
    assert r.rows.select("submit", "start", "end").row(0) == (
        datetime(2026, 11, 1, 5, 20, tzinfo=UTC),
        datetime(2026, 11, 1, 6, 30, tzinfo=UTC),
        datetime(2026, 11, 1, 7, 0, tzinfo=UTC),
    )
    assert findings(r) == [
        ("slurm_ambiguous_time_resolved", "info", 1),
        ("slurm_ambiguous_time_guessed", "warning", 1),
    ]


def test_an_ambiguous_end_without_elapsed_is_the_first_reading() -> None:
    """No Elapsed: End 01:10 reads as 05:10Z (EDT), before the 05:50Z Start: quarantined
    (good rows are not lost: the next one lands), and the guess is a warning."""
    r = parse(
        [
            "902|902|COMPLETED|2026-11-01T01:00:00|2026-11-01T01:50:00|2026-11-01T01:10:00||x",
            "903|903|COMPLETED|2026-11-01T03:00:00|2026-11-01T03:00:00|2026-11-01T04:00:00||x",
        ],
        timezone="America/New_York",
    )
    assert r.rows["job_id"].to_list() == ["903"]
    assert "End 2026-11-01T05:10:00Z is before Start" in r.quarantine["reason"][0]
    assert findings(r) == [("slurm_ambiguous_time_guessed", "warning", 1)]


def test_a_nonexistent_spring_forward_time_reads_as_the_zone_library_does() -> None:
    """02:30 on 2026-03-08 does not exist in New York (02:00 EST -> 03:00 EDT): read with the
    offset before the change, 02:30 EST = 07:30Z; the End 04:00 EDT is 08:00Z: 30 minutes."""
    r = parse(["904|904|COMPLETED|2026-03-08T01:00:00|2026-03-08T02:30:00|"
               "2026-03-08T04:00:00|00:30:00|gres/gpu=1"], timezone="America/New_York")  # fmt: skip
    assert r.rows.select("start", "end").row(0) == (
        datetime(2026, 3, 8, 7, 30, tzinfo=UTC),
        datetime(2026, 3, 8, 8, 0, tzinfo=UTC),
    )
    assert findings(r) == [("slurm_nonexistent_time", "info", 1)]


def test_utc_times_need_no_resolution() -> None:
    r = parse(["905|905|COMPLETED|2026-11-01T01:00:00|2026-11-01T01:50:00|"
               "2026-11-01T02:10:00|00:20:00|gres/gpu=1"])  # fmt: skip
    assert findings(r) == []


def test_pending_array_ranges_list_every_task() -> None:
    """`700_[0-99%10]`: tasks 0..99 (the `%10` throttle is no task); `701_[1-3,7]`: 4 tasks."""
    r = parse(
        [
            "700_[0-99%10]|700|PENDING|2026-11-01T10:00:00|Unknown|Unknown|00:00:00|",
            "701_[1-3,7]|701|PENDING|2026-11-01T10:00:00|Unknown|Unknown|00:00:00|",
        ]
    )
    tasks = r.rows["array_task_ids"].to_list()
    assert tasks == [list(range(100)), [1, 2, 3, 7]]


def _undated_source(tmp_path: Path, same_mtime: bool) -> list[IngestFinding]:
    line = "|".join(
        ["800", "800", "c1", "gpu", "normal", "a", "g", "1", "u", "1", "2026-11-01T12:00:00",
         "2026-11-01T12:00:00", "2026-11-01T12:00:00", "{end}", "01:00:00", "0:0", "{state}",
         "1", "8", "8", "1G", "gres/gpu=4", "gres/gpu=4", "UNLIMITED", "n1", "job"]
    )  # fmt: skip
    d = tmp_path / "exports"
    d.mkdir()
    (d / "a.txt").write_text(line.format(end="Unknown", state="RUNNING"))
    (d / "b.txt").write_text(line.format(end="2026-11-01T14:00:00", state="COMPLETED"))
    t = datetime(2026, 11, 1, 13, tzinfo=UTC).timestamp()
    os.utime(d / "a.txt", (t, t))
    os.utime(d / "b.txt", (t, t) if same_mtime else (t + 60, t + 60))
    source = Source(name="undated", kind="slurm", location=str(d / "*.txt"))
    report = ingest_source(Config(sources=[source]), source, [datetime(2026, 11, 1).date()],
                           tmp_path / "home")  # fmt: skip
    return [
        w for w in report.warnings
        if isinstance(w, IngestFinding) and w.check == "slurm_export_order_guessed"
    ]  # fmt: skip


def test_undated_exports_of_one_job_say_the_order_was_guessed(tmp_path: Path) -> None:
    found = _undated_source(tmp_path, same_mtime=False)
    assert [(f.severity, f.count) for f in found] == [("info", 1)]
    assert "a.txt" in found[0].message and "b.txt" in found[0].message
    assert "same time" not in found[0].message


def test_undated_exports_written_at_the_same_time_say_so(tmp_path: Path) -> None:
    found = _undated_source(tmp_path, same_mtime=True)
    assert [(f.severity, f.count) for f in found] == [("info", 1)]
    assert "1 with files written at the same time: by End and State alone" in found[0].message


def test_the_exported_at_column_is_the_file_mtime(tmp_path: Path) -> None:
    from ingest.scheduler.slurm import read_sacct

    f = tmp_path / "sacct.txt"
    f.write_text("|".join(COLUMNS) + "\n1|1|COMPLETED|2026-11-01T00:00:00|"
                 "2026-11-01T00:00:00|2026-11-01T01:00:00|01:00:00|gres/gpu=1\n")  # fmt: skip
    t = datetime(2026, 11, 1, 2, tzinfo=UTC)
    os.utime(f, (t.timestamp(), t.timestamp()))
    assert read_sacct(f, source="s").rows["x_exported_at"].to_list() == [t]
