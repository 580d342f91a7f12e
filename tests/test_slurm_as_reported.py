"""Slurm runs as sacct really reports them (issue 12, items 4, 7, 8, 9; docs/metrics.md): a
hand-made fleet of one day, D = 2026-11-01 (UTC), landed through the sacct reader and built by
the whole dbt project, every expected figure worked out here by hand.

- `mig-1` (azure, 1 H100 split into seven 1g.10gb MIG instances, GPU_I_ID 1-7, each reporting
  PROF_GR_ENGINE_ACTIVE 0.5 every 60 s all day): a daily FOCUS line of $168 ($7/h for the GPU,
  so $1 per hour of a 1/7 instance). Job 601 (`gres/gpu:1g.10gb=1,gres/gpu=1`, 00:00-02:00)
  carries `hpc_job=601` on instance 1's samples; job 602 (the same GRES, 00:00-03:00) has no
  label.
- `dst-1` (azure, 8 GPUs, no telemetry): $192/day ($8/h, $1 per GPU-hour). Job 900 (8 GPUs) ran
  from 01:50 EDT to 01:10 EST on the night clocks went back in New York (sacct printed local
  times: Start 2026-11-01T01:50:00, End 2026-11-01T01:10:00, Elapsed 00:20:00).
- pending arrays (UTC file, submitted 10:00): `700_[0-99%10]` (1 GPU each), `701_[1-3,7]`
  (2 GPUs each), and `702_[1-2]` (1 GPU each) beside its started task `702_0` (JobIDRaw 702,
  RUNNING on dst-1 from 11:00).
- `ord-1` (azure, 8 GPUs, no telemetry, $192/day): job 800 (4 GPUs, started 12:00) is RUNNING on
  line 3 of `old.txt` and COMPLETED (End 14:00) on line 1 of `new.txt`, written an hour later;
  neither name has a date.
"""

from __future__ import annotations

import os
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt_in_process import dbt_build
from test_edges import dcgm, every, focus_line, frame

from fleetledger.config import Config, Source
from fleetledger.config_tables import record_accounted_days, write_config_tables
from ingest.core.findings import IngestFinding
from ingest.core.landing import land, write_schema_files
from ingest.registry import ingest_source

D = date(2026, 11, 1)
T0 = datetime(2026, 11, 1, tzinfo=UTC)
HOUR = timedelta(hours=1)
MIG = "gres/gpu:1g.10gb=1,gres/gpu=1"


def sacct(
    job: str,
    raw: str,
    start: str,
    end: str,
    elapsed: str,
    state: str,
    tres: str,
    nodes: str,
    *,
    submit: str | None = None,
) -> str:
    """One line of the default 26 sacct fields (docs/landing.md); a pending job has no
    AllocTRES."""
    alloc = "" if state == "PENDING" else f"billing=8,cpu=8,{tres},mem=16000M,node=1"
    fields = [
        job, raw, "c1", "gpu", "normal", "research", "g", "1000", "ana", "1000",
        submit or start, submit or start, start, end, elapsed, "0:0", state, "1", "8", "8",
        "16000M", f"billing=8,cpu=8,{tres},mem=16000M,node=1", alloc, "UNLIMITED", nodes, "job",
    ]  # fmt: skip
    return "|".join(fields)


def config(tmp: Path) -> Config:
    inventory = [
        {"host": "mig-1", "resource_id": "vm-mig", "provider": "azure", "site": "az1", "gpus": 1},
        {"host": "dst-1", "resource_id": "vm-dst", "provider": "azure", "site": "az1", "gpus": 8},
        {"host": "ord-1", "resource_id": "vm-ord", "provider": "azure", "site": "az1", "gpus": 8},
    ]
    sources = [
        Source(name="utc", kind="slurm", location=str(tmp / "utc.txt")),
        Source(
            name="ny",
            kind="slurm",
            location=str(tmp / "ny.txt"),
            options={"timezone": "America/New_York"},
        ),
        Source(name="undated", kind="slurm", location=str(tmp / "undated/*.txt")),
    ]
    return Config(
        inventory=inventory,
        sources=sources,
        teams=[{"team": "research", "match": {"slurm_account": ["research"]}}],
    )


def write_sacct_files(tmp: Path) -> None:
    pending = "Unknown"
    utc = [
        sacct("601", "601", "2026-11-01T00:00:00", "2026-11-01T02:00:00", "02:00:00",
              "COMPLETED", MIG, "mig-1"),
        sacct("602", "602", "2026-11-01T00:00:00", "2026-11-01T03:00:00", "03:00:00",
              "COMPLETED", MIG, "mig-1"),
        sacct("700_[0-99%10]", "700", pending, pending, "00:00:00", "PENDING", "gres/gpu=1",
              "None assigned", submit="2026-11-01T10:00:00"),
        sacct("701_[1-3,7]", "701", pending, pending, "00:00:00", "PENDING", "gres/gpu=2",
              "None assigned", submit="2026-11-01T10:00:00"),
        sacct("702_0", "702", "2026-11-01T11:00:00", pending, "13:00:00", "RUNNING",
              "gres/gpu=1", "dst-1", submit="2026-11-01T10:00:00"),
        sacct("702_[1-2]", "702", pending, pending, "00:00:00", "PENDING", "gres/gpu=1",
              "None assigned", submit="2026-11-01T10:00:00"),
    ]  # fmt: skip
    (tmp / "utc.txt").write_text("\n".join(utc) + "\n")
    # New York local times: 01:50 EDT (05:50Z) to 01:10 EST (06:10Z), Elapsed 20 minutes
    ny = sacct("900", "900", "2026-11-01T01:50:00", "2026-11-01T01:10:00", "00:20:00",
               "COMPLETED", "gres/gpu=8", "dst-1", submit="2026-11-01T01:00:00")  # fmt: skip
    (tmp / "ny.txt").write_text(ny + "\n")
    undated = tmp / "undated"
    undated.mkdir()
    other = sacct("801", "801", "2026-11-01T09:00:00", "2026-11-01T10:00:00", "01:00:00",
                  "COMPLETED", "gres/gpu=1", "ord-1")  # fmt: skip
    running = sacct("800", "800", "2026-11-01T12:00:00", "Unknown", "01:00:00", "RUNNING",
                    "gres/gpu=4", "ord-1")  # fmt: skip
    done = sacct("800", "800", "2026-11-01T12:00:00", "2026-11-01T14:00:00", "02:00:00",
                 "COMPLETED", "gres/gpu=4", "ord-1")  # fmt: skip
    (undated / "old.txt").write_text("\n".join([other, other.replace("801", "803"), running]))
    (undated / "new.txt").write_text(done + "\n")
    written = datetime(2026, 11, 1, 13, tzinfo=UTC).timestamp()
    os.utime(undated / "old.txt", (written, written))
    os.utime(undated / "new.txt", (written + 3600, written + 3600))


def mig_samples() -> list[dict[str, Any]]:
    rows = []
    for t in every(T0, T0 + 24 * HOUR, 60):
        for inst in range(1, 8):
            row = dcgm("mig-1", 0, t, "DCGM_FI_PROF_GR_ENGINE_ACTIVE", 0.5)
            row.update(mig_instance=str(inst), mig_profile="1g.10gb")
            if inst == 1 and t < T0 + 2 * HOUR:
                row["hpc_job"] = "601"
            rows.append(row)
    return rows


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[duckdb.DuckDBPyConnection, dict]:
    tmp = tmp_path_factory.mktemp("slurm_as_reported")
    home = tmp / "home"
    write_sacct_files(tmp)
    cfg = config(tmp)
    write_schema_files(home)
    write_config_tables(cfg, home)
    record_accounted_days(home, [D])
    reports = {s.name: ingest_source(cfg, s, [D], home) for s in cfg.sources}
    lines = [
        focus_line("1", "vm-mig", T0, T0 + 24 * HOUR, 168.0),
        focus_line("2", "vm-dst", T0, T0 + 24 * HOUR, 192.0),
        focus_line("3", "vm-ord", T0, T0 + 24 * HOUR, 192.0),
    ]
    land(home, "focus_lines", "azure-focus", "period=2026-11", frame("focus_lines", lines))
    land(home, "dcgm_samples", "dcgm", f"date={D}", frame("dcgm_samples", mig_samples()))
    dbt_build(home, "fleetledger", run_id="slurm-as-reported")
    con = duckdb.connect(str(home / "build/warehouse.duckdb"), read_only=True)
    yield con, reports
    con.close()


def run(con: duckdb.DuckDBPyConnection, run_id: str, columns: str) -> tuple:
    return con.execute(f"select {columns} from fct_runs where run_id = ?", [run_id]).fetchone()


def cost(con: duckdb.DuckDBPyConnection, run_id: str) -> tuple:
    """(GPU-hours the run held: busy + allocated idle, its cost)."""
    return con.execute(
        "select busy_gpu_hours + allocated_idle_gpu_hours, cost from fct_run_costs "
        "where run_id = ?",
        [run_id],
    ).fetchone()


def test_a_mig_gres_job_holds_its_slice_fraction(fleet) -> None:
    """Item 4. `gres/gpu:1g.10gb=1,gres/gpu=1` is one 1g.10gb instance: 0 whole GPUs, 1 slice,
    1/7 GPU. Job 601 (labelled on instance 1) holds it 2 h: 2/7 = 0.285714 GPU-hours at $7 per
    GPU-hour = $2.00 (before: 1 whole GPU, 2 GPU-hours in fct_runs). Job 602 (no label) shares
    the 1g.10gb instances its node reports: 00:00-02:00 the 6 that 601 leaves free, 1/6 of each
    (6 x 1/6 x 1/7 x 2 h = 2/7), 02:00-03:00 all 7, 1/7 of each (7 x 1/7 x 1/7 x 1 h = 1/7):
    3/7 = 0.428571 GPU-hours, $3.00 (before: a whole-GPU holding of a GPU with no whole unit, so
    nothing)."""
    gpus, slices, equivalents, gpu_hours = run(
        fleet[0], "slurm:c1:601:1", "gpus, mig_slices, gpu_equivalents, gpu_hours"
    )
    assert (gpus, slices) == (0, 1)
    assert equivalents == pytest.approx(1 / 7)
    assert gpu_hours == pytest.approx(2 / 7)
    assert cost(fleet[0], "slurm:c1:601:1") == (pytest.approx(2 / 7), pytest.approx(2.0))
    assert cost(fleet[0], "slurm:c1:602:1") == (pytest.approx(3 / 7), pytest.approx(3.0))
    # the GPU's 24 h are held at most once: 5/7 GPU-hours held, the rest unallocated
    held, unallocated = (
        fleet[0]
        .execute(
            "select sum(busy_seconds + allocated_idle_seconds) / 3600.0, "
            "sum(unallocated_seconds) / 3600.0 from fct_gpu_hours where host = 'mig-1'"
        )
        .fetchone()
    )
    assert held == pytest.approx(5 / 7)
    assert unallocated == pytest.approx(24 - 5 / 7)


def test_a_dst_straddling_job_holds_gpus_times_elapsed(fleet) -> None:
    """Item 8. 01:50 EDT is 05:50Z; 01:10 is ambiguous (05:10Z EDT, 06:10Z EST) and Elapsed
    (20 min) picks 06:10Z: 8 GPUs x 1/3 h = 2.6667 GPU-hours, $1 each = $2.67 (before: End
    05:10Z, before Start, so the job was quarantined, or -5.33 GPU-hours before that)."""
    started, ended = run(fleet[0], "slurm:c1:900:1", "started_at, ended_at")
    assert (started, ended) == (
        T0 + timedelta(hours=5, minutes=50),
        T0 + timedelta(hours=6, minutes=10),
    )
    assert cost(fleet[0], "slurm:c1:900:1") == (pytest.approx(8 * 20 / 60), pytest.approx(8 / 3))
    found = [w for w in fleet[1]["ny"].warnings if isinstance(w, IngestFinding)]
    assert [(f.check, f.severity, f.count) for f in found] == [
        ("slurm_ambiguous_time_resolved", "info", 1)
    ]


def test_a_pending_array_counts_each_task(fleet) -> None:
    """Item 9. Pending at the end of D: 700_[0-99%10] is 100 tasks x 1 GPU, 701_[1-3,7] 4 tasks
    x 2 GPUs, 702_[1-2] 2 tasks x 1 GPU (702_0 started: it is running, not pending): 106 runs,
    100 + 8 + 2 = 110 GPUs (before: 2 runs and 1 + 2 = 3 GPUs, 702's range dropped because its
    JobIDRaw started)."""
    assert fleet[0].execute(
        "select runs_pending_at_day_end, pending_gpus_at_day_end from fct_ops_daily where day = ?",
        [D],
    ).fetchone() == (106, 110)
    ids = [
        r[0]
        for r in fleet[0]
        .execute(
            "select job_id from fct_runs where job_id like '70%' and started_at is null "
            "order by job_id"
        )
        .fetchall()
    ]
    assert len(ids) == 106 and ids[:3] == ["700_0", "700_1", "700_10"]
    assert ids[-6:] == ["701_1", "701_2", "701_3", "701_7", "702_1", "702_2"]


def test_the_latest_undated_export_is_the_newest_file(fleet) -> None:
    """Item 7. Job 800's RUNNING row is on line 3 of old.txt, its COMPLETED row on line 1 of
    new.txt, written an hour later: COMPLETED wins, 4 GPUs x 2 h = 8 GPU-hours, $8 (before: the
    build failed, stg_slurm__jobs's key test seeing the attempt twice with no snapshot day; the
    higher line number would have won, RUNNING until the window's end: 4 x 12 h = 48). The
    choice rested on the files' mtimes, and the ingest says so."""
    state, ended = run(fleet[0], "slurm:c1:800:1", "state, ended_at")
    assert (state, ended) == ("COMPLETED", T0 + 14 * HOUR)
    assert cost(fleet[0], "slurm:c1:800:1") == (pytest.approx(8.0), pytest.approx(8.0))
    found = [
        w
        for w in fleet[1]["undated"].warnings
        if isinstance(w, IngestFinding) and w.check == "slurm_export_order_guessed"
    ]
    assert [(f.severity, f.count) for f in found] == [("info", 1)]
    assert "job 800" in found[0].message and "new.txt" in found[0].message
