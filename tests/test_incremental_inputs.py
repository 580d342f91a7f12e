"""When a run rebuilds every model, which days it recomputes, and what a failed build leaves
(fleetledger/incremental.py): pure functions on a hand-made home, no pipeline run."""

from __future__ import annotations

import json
import shutil
import sys
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from rich.console import Console

from fleetledger import cli
from fleetledger.cli import _print_run_summary
from fleetledger.config import Config
from fleetledger.config_tables import record_accounted_days
from fleetledger.incremental import (
    BEFORE_RUN,
    BEFORE_RUN_MARKER,
    BUILD_INPUTS,
    ENGINE_KEY,
    PENDING_DAYS,
    DaySpan,
    build_inputs,
    day_batches,
    full_refresh_reason,
    guarded_build,
    recompute_span,
    restore_interrupted_build,
    set_aside_unreadable_history,
)
from fleetledger.pipeline import PipelineResult
from fleetledger.publish import build_path, history_path, publish_warehouse, published_path
from ingest.core.errors import IngestError

PROJECT = Path(__file__).resolve().parents[1] / "dbt_project"


def _config(**overrides: object) -> Config:
    base: dict = {
        "teams": [{"team": "research", "match": {"slurm_account": ["res"]}}],
        "idle_threshold": 0.05,
    }
    base.update(overrides)
    return Config.model_validate(base)


def _warehouse(home: Path, value: int) -> None:
    """What a build writes: `t.v` in the build warehouse, and a day model's row (`t.v` too) in
    the day models' own file (build/history.duckdb)."""
    build_path(home).parent.mkdir(parents=True, exist_ok=True)
    for path in (build_path(home), history_path(home)):
        con = duckdb.connect(str(path))
        con.execute("create or replace table t as select ? as v", [value])
        con.close()


def _value(home: Path, path: Path | None = None) -> int:
    """`v` of the build warehouse of `home` (or of the file `path`)."""
    con = duckdb.connect(str(path or build_path(home)), read_only=True)
    try:
        row = con.execute("select v from t").fetchone()
        assert row is not None
        return int(row[0])
    finally:
        con.close()


def _built(home: Path, cfg: Config) -> None:
    """A home after a successful build of `cfg` (the warehouse and the recorded inputs)."""
    _warehouse(home, 1)
    with guarded_build(
        home, DaySpan(date(2026, 1, 1), date(2026, 1, 1)), build_inputs(cfg, PROJECT)
    ):
        pass


def _summary(
    home: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    day: date,
    **result: Any,
) -> str:
    """What the CLI prints after a one-day run of `home` (PipelineResult fields in `result`)."""
    # an earlier CLI test in this worker bound the CLI's console to its own, closed, stdout
    monkeypatch.setattr(cli, "out", Console(file=sys.stdout, width=120))
    _print_run_summary(
        PipelineResult(home=home, start=day, end=day, run_id="r", duration_s=1.0, **result)
    )
    return capsys.readouterr().out


def test_first_build_and_requested_refresh(tmp_path: Path) -> None:
    cfg = _config()
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == "no built warehouse yet"
    _built(tmp_path, cfg)
    assert full_refresh_reason(tmp_path, cfg, PROJECT) is None
    assert full_refresh_reason(tmp_path, cfg, PROJECT, requested=True) == (
        "requested (--full-refresh)"
    )


def test_a_home_without_its_day_models_file_is_refreshed_in_full(tmp_path: Path) -> None:
    # the day models live in build/history.duckdb: a home built before they had a file of
    # their own (or whose file was removed) rebuilds every model, so no day is missing
    cfg = _config()
    _built(tmp_path, cfg)
    history_path(tmp_path).unlink()
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == (
        "no day models yet (build/history.duckdb)"
    )
    # on Spark the day models are Spark tables: no such file
    spark = _config(warehouse={"engine": "spark"})
    assert full_refresh_reason(tmp_path, spark, PROJECT) != (
        "no day models yet (build/history.duckdb)"
    )


def test_only_a_day_models_file_duckdb_cannot_read_is_set_aside(tmp_path: Path) -> None:
    cfg = _config()
    _built(tmp_path, cfg)
    history = history_path(tmp_path)
    # a file that opens stays where it is
    assert set_aside_unreadable_history(tmp_path, "run1") is None
    assert history.is_file()
    # one that is not a DuckDB file (with a WAL beside it) moves aside, WAL and all
    history.write_bytes(b"\0garbage" * 4096)
    Path(f"{history}.wal").write_bytes(b"wal")
    moved, error = set_aside_unreadable_history(tmp_path, "run2") or (None, "")
    assert moved == tmp_path / "build" / "history.unreadable-run2.duckdb"
    assert "not a valid DuckDB database file" in error
    assert moved.read_bytes() == b"\0garbage" * 4096
    assert Path(f"{moved}.wal").read_bytes() == b"wal"
    assert not history.exists() and not Path(f"{history}.wal").exists()
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == (
        "no day models yet (build/history.duckdb)"
    )
    # a truncated one too
    good = tmp_path / "good.duckdb"
    con = duckdb.connect(str(good))
    con.execute("create table t as select range as i from range(300000)")
    con.close()
    history.write_bytes(good.read_bytes()[: good.stat().st_size // 3])
    assert set_aside_unreadable_history(tmp_path, "run3") is not None
    assert not history.exists()
    # and one with a flipped bit (its header's checksum no longer matches)
    damaged = bytearray(good.read_bytes())
    damaged[12] ^= 0x01
    history.write_bytes(bytes(damaged))
    moved, error = set_aside_unreadable_history(tmp_path, "run5") or (None, "")
    assert moved is not None and "Corrupt database file" in error
    assert not history.exists()
    # any other failure to open (here: a folder in its place) is raised, nothing moved
    history.mkdir()
    with pytest.raises(duckdb.Error):
        set_aside_unreadable_history(tmp_path, "run4")
    assert history.is_dir()
    assert sorted(p.name for p in history.parent.glob("history.unreadable-*.duckdb")) == [
        "history.unreadable-run2.duckdb",
        "history.unreadable-run3.duckdb",
        "history.unreadable-run5.duckdb",
    ]


def test_a_full_refresh_that_fails_is_done_again_by_the_next_run(tmp_path: Path) -> None:
    # a full refresh rewrites every day of every day model; one that fails part-way leaves
    # some rewritten and some not, so the next run must refresh in full too
    cfg = _config()
    _built(tmp_path, cfg)
    span = DaySpan(date(2026, 1, 5), date(2026, 1, 5))
    with pytest.raises(RuntimeError):
        with guarded_build(tmp_path, span, build_inputs(cfg, PROJECT), full_refresh=True):
            _warehouse(tmp_path, 2)
            raise RuntimeError("dbt failed")
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == (
        "no record of the inputs of the last build"
    )
    # killed outright during a full refresh: the same
    _built(tmp_path, cfg)
    guard = guarded_build(tmp_path, span, build_inputs(cfg, PROJECT), full_refresh=True)
    guard.__enter__()
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == (
        "no record of the inputs of the last build"
    )
    restore_interrupted_build(tmp_path)
    # and one that finishes records its inputs
    with guarded_build(tmp_path, span, build_inputs(cfg, PROJECT), full_refresh=True):
        _warehouse(tmp_path, 3)
    assert full_refresh_reason(tmp_path, cfg, PROJECT) is None


def test_a_team_rule_change_forces_a_full_refresh_named_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _built(tmp_path, _config())
    # the team `research` now also matches the Slurm account `ml`: only `teams` changed
    changed = _config(teams=[{"team": "research", "match": {"slurm_account": ["res", "ml"]}}])
    reason = full_refresh_reason(tmp_path, changed, PROJECT)
    assert reason == "config key `teams` changed"
    # two keys, and a key no model reads (alerts, sources) does not count
    both = _config(teams=changed.model_dump()["teams"], idle_threshold=0.1)
    assert full_refresh_reason(tmp_path, both, PROJECT) == (
        "config keys `idle_threshold`, `teams` changed"
    )
    ingest_only = _config(max_row_drop=0.9, partitions_start="2025-01-01")
    assert full_refresh_reason(tmp_path, ingest_only, PROJECT) is None
    # nor the size of a full build's day batches: the rows are the same whatever the batches
    batched = _config(warehouse={"day_batch_rows": 1_000})
    assert full_refresh_reason(tmp_path, batched, PROJECT) is None

    summary = _summary(tmp_path, monkeypatch, capsys, date(2026, 1, 1), full_refresh=reason)
    assert "full refresh: config key `teams` changed" in summary
    assert "batches of days" not in summary
    # a full build that ran the sample-grain models in batches of days names them
    starts = [date(2026, 1, 1), date(2026, 1, 3)]
    summary = _summary(
        tmp_path, monkeypatch, capsys, date(2026, 1, 3), full_refresh=reason, day_batches=starts
    )
    assert (
        "the sample-grain day models built in 2 batches of days, from 2026-01-01, 2026-01-03"
        in summary
    )


def test_a_dbt_project_change_forces_a_full_refresh(tmp_path: Path) -> None:
    project = tmp_path / "project"
    shutil.copytree(PROJECT / "macros", project / "macros")
    (project / "models").mkdir()
    (project / "models" / "m.sql").write_text("select 1 as x\n")
    (project / "dbt_project.yml").write_text("name: p\n")
    home = tmp_path / "home"
    cfg = _config()
    _warehouse(home, 1)
    with guarded_build(
        home, DaySpan(date(2026, 1, 1), date(2026, 1, 1)), build_inputs(cfg, project)
    ):
        pass
    assert full_refresh_reason(home, cfg, project) is None
    (project / "models" / "m.sql").write_text("select 2 as x\n")
    assert full_refresh_reason(home, cfg, project) == "the dbt project changed"


def test_another_engine_version_forces_a_full_refresh(tmp_path: Path) -> None:
    # the day models store the engine's hashes (the units' keys, macro unit_key): a home built
    # by another DuckDB version rebuilds every day rather than join today's keys with its own
    cfg = _config()
    _built(tmp_path, cfg)
    record = tmp_path / BUILD_INPUTS
    inputs = json.loads(record.read_text())
    assert inputs[ENGINE_KEY] == f"duckdb {duckdb.__version__}"
    assert full_refresh_reason(tmp_path, cfg, PROJECT) is None
    record.write_text(json.dumps({**inputs, ENGINE_KEY: "duckdb 0.9.2"}))
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == (
        "the warehouse engine or its version changed"
    )
    # a home recorded before the key existed
    record.write_text(json.dumps({k: v for k, v in inputs.items() if k != ENGINE_KEY}))
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == (
        "the warehouse engine or its version changed"
    )


def test_a_failed_build_leaves_the_warehouse_as_it_was(tmp_path: Path) -> None:
    cfg = _config()
    _built(tmp_path, cfg)
    recorded = (tmp_path / BUILD_INPUTS).read_text()
    span = DaySpan(date(2026, 1, 5), date(2026, 1, 6))
    with pytest.raises(RuntimeError):
        with guarded_build(tmp_path, span, {"teams": "other"}):
            # the day models' file is never copied (build/history.duckdb)
            assert not list(history_path(tmp_path).parent.glob("history*before*"))
            _warehouse(tmp_path, 2)  # what the failing build wrote
            raise RuntimeError("dbt failed")
    assert _value(tmp_path) == 1
    # what it wrote to the day models stays; its days are pending (below), so the next run
    # recomputes them in every day model
    assert _value(tmp_path, history_path(tmp_path)) == 2
    assert full_refresh_reason(tmp_path, cfg, PROJECT) is None
    assert not (build_path(tmp_path).parent / BEFORE_RUN).exists()
    # the inputs of the last good build stay recorded; the failed days stay pending
    assert (tmp_path / BUILD_INPUTS).read_text() == recorded
    assert json.loads((tmp_path / PENDING_DAYS).read_text()) == {
        "first": "2026-01-05",
        "last": "2026-01-06",
    }
    # the next run (day 8) recomputes 5..8: its own day and the days that did not finish
    assert recompute_span(tmp_path, date(2026, 1, 8), date(2026, 1, 8)) == DaySpan(
        date(2026, 1, 5), date(2026, 1, 8)
    )
    with guarded_build(tmp_path, DaySpan(date(2026, 1, 5), date(2026, 1, 8)), {"k": "v"}):
        _warehouse(tmp_path, 3)
    assert _value(tmp_path) == 3
    assert not (tmp_path / PENDING_DAYS).exists()
    assert json.loads((tmp_path / BUILD_INPUTS).read_text()) == {"k": "v"}


def test_a_killed_build_is_put_back_by_the_next_run(tmp_path: Path) -> None:
    _built(tmp_path, _config())
    span = DaySpan(date(2026, 1, 5), date(2026, 1, 5))
    guard = guarded_build(tmp_path, span, {"k": "v"})
    guard.__enter__()  # the run is killed while dbt writes: no exit, the copy stays
    _warehouse(tmp_path, 2)
    assert (build_path(tmp_path).parent / BEFORE_RUN).exists()
    assert restore_interrupted_build(tmp_path)
    assert _value(tmp_path) == 1
    assert not restore_interrupted_build(tmp_path)


def test_a_failed_first_build_leaves_no_warehouse(tmp_path: Path) -> None:
    span = DaySpan(date(2026, 1, 5), date(2026, 1, 5))
    with pytest.raises(RuntimeError):
        with guarded_build(tmp_path, span, {"k": "v"}):
            _warehouse(tmp_path, 2)
            raise RuntimeError("dbt failed")
    assert not build_path(tmp_path).exists()
    assert full_refresh_reason(tmp_path, _config(), PROJECT) == "no built warehouse yet"


def test_a_published_build_is_kept_by_the_snapshot_without_a_copy(tmp_path: Path) -> None:
    # after a publish the build warehouse is the snapshot's file: the run copies nothing, a
    # marker names the snapshot, and a failed build gets the snapshot's content back
    _built(tmp_path, _config())
    publish_warehouse(tmp_path)
    span = DaySpan(date(2026, 1, 5), date(2026, 1, 5))
    folder = build_path(tmp_path).parent
    with pytest.raises(RuntimeError):
        with guarded_build(tmp_path, span, {"k": "v"}):
            assert (folder / BEFORE_RUN_MARKER).exists()
            assert not (folder / BEFORE_RUN).exists()
            _warehouse(tmp_path, 2)
            raise RuntimeError("dbt failed")
    assert _value(tmp_path) == 1
    assert not (folder / BEFORE_RUN_MARKER).exists()
    # a killed run: the next run copies the snapshot back before it starts
    guard = guarded_build(tmp_path, span, {"k": "v"})
    guard.__enter__()
    _warehouse(tmp_path, 3)
    assert restore_interrupted_build(tmp_path)
    assert _value(tmp_path) == 1
    assert not restore_interrupted_build(tmp_path)
    # a successful build: no marker left, its fingerprint recorded
    with guarded_build(tmp_path, span, {"k": "v"}):
        _warehouse(tmp_path, 4)
    assert _value(tmp_path) == 4 and _value(tmp_path, published_path(tmp_path)) == 1
    assert not (folder / BEFORE_RUN_MARKER).exists()
    assert json.loads((tmp_path / BUILD_INPUTS).read_text()) == {"k": "v"}


def test_a_build_written_after_its_publish_is_copied(tmp_path: Path) -> None:
    # the forecasts or alerts wrote the build warehouse after the last publish (or it failed):
    # the snapshot is not the build's state, so the run copies the build as before
    _built(tmp_path, _config())
    publish_warehouse(tmp_path)
    _warehouse(tmp_path, 5)
    span = DaySpan(date(2026, 1, 5), date(2026, 1, 5))
    folder = build_path(tmp_path).parent
    with pytest.raises(RuntimeError):
        with guarded_build(tmp_path, span, {"k": "v"}):
            assert (folder / BEFORE_RUN).exists()
            assert not (folder / BEFORE_RUN_MARKER).exists()
            _warehouse(tmp_path, 6)
            raise RuntimeError("dbt failed")
    assert _value(tmp_path) == 5


def test_a_snapshot_replaced_during_a_killed_run_forces_a_full_rebuild(tmp_path: Path) -> None:
    # the marker's snapshot is no longer the one it named: nothing can be put back, so the
    # build warehouse goes and the next run rebuilds every model from the landed data
    cfg = _config()
    _built(tmp_path, cfg)
    publish_warehouse(tmp_path)
    guard = guarded_build(tmp_path, DaySpan(date(2026, 1, 5), date(2026, 1, 5)), {"k": "v"})
    guard.__enter__()
    _warehouse(tmp_path, 7)
    shutil.copyfile(build_path(tmp_path), published_path(tmp_path))
    assert restore_interrupted_build(tmp_path)
    assert not build_path(tmp_path).exists()
    assert full_refresh_reason(tmp_path, cfg, PROJECT) == "no built warehouse yet"


def test_a_rerun_of_an_earlier_day_recomputes_the_day_after_it_too(tmp_path: Path) -> None:
    # days 1-3 accounted: a re-run of day 2 recomputes days 2-3 (day 2's last samples cover
    # day 3's first minutes); a run of the newest day (day 4 not accounted), or of days 2-3,
    # recomputes its range
    record_accounted_days(tmp_path, [date(2026, 1, d) for d in (1, 2, 3)])
    assert recompute_span(tmp_path, date(2026, 1, 2), date(2026, 1, 2)) == DaySpan(
        date(2026, 1, 2), date(2026, 1, 3)
    )
    assert recompute_span(tmp_path, date(2026, 1, 3), date(2026, 1, 3)) == DaySpan(
        date(2026, 1, 3), date(2026, 1, 3)
    )
    assert recompute_span(tmp_path, date(2026, 1, 2), date(2026, 1, 3)) == DaySpan(
        date(2026, 1, 2), date(2026, 1, 3)
    )
    # the day after, not every later day: a re-run of day 1 recomputes days 1-2
    assert recompute_span(tmp_path, date(2026, 1, 1), date(2026, 1, 1)) == DaySpan(
        date(2026, 1, 1), date(2026, 1, 2)
    )
    # a day whose record was never written (a write killed after creating the new partition's
    # folder, before renaming its file in) is not accounted
    (tmp_path / "raw" / "accounted_days" / "pipeline" / "date=2026-01-05").mkdir()
    assert recompute_span(tmp_path, date(2026, 1, 4), date(2026, 1, 4)) == DaySpan(
        date(2026, 1, 4), date(2026, 1, 4)
    )


def test_the_run_summary_names_the_days_the_build_recomputed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # a run of day 2 that recomputed days 2-3 (day 3 was accounted already) says so
    span = DaySpan(date(2026, 1, 2), date(2026, 1, 3))
    summary = _summary(tmp_path, monkeypatch, capsys, date(2026, 1, 2), recomputed=span)
    assert "incremental: recomputed 2026-01-02..2026-01-03" in summary


def _landed_dcgm(home: Path, source: str, day: date, rows: int) -> None:
    folder = home / "raw" / "dcgm_samples" / source / f"date={day}"
    folder.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table({"value": [0.0] * rows}), folder / "part-0.parquet")


def test_a_full_build_runs_its_day_batches_over_every_accounted_day(tmp_path: Path) -> None:
    """The batches a full build runs the sample-grain day models in (macros/day_batches.sql):
    every accounted day and the run's own, consecutive days grouped while their landed DCGM rows
    stay within the budget, a larger day a batch of its own."""
    span = DaySpan(date(2026, 1, 8), date(2026, 1, 8))
    # nothing accounted or landed yet: one batch, the run's day
    assert day_batches(tmp_path, span, max_rows=10) == [date(2026, 1, 8)]
    record_accounted_days(tmp_path, [date(2026, 1, d) for d in range(3, 8)])
    # a folder that is not a day is not one
    (tmp_path / "raw" / "accounted_days" / "pipeline" / "date=notaday").mkdir()
    # rows a day, two sources on the 5th: 3, 4, (2 + 5), 9, 1 and the run's 8th with none
    for day, rows in ((3, 3), (4, 4), (5, 2), (6, 9), (7, 1)):
        _landed_dcgm(tmp_path, "dc-a", date(2026, 1, day), rows)
    _landed_dcgm(tmp_path, "dc-b", date(2026, 1, 5), 5)
    # within 10 rows: 3 + 4; 7; 9 + 1 (+ 0 on the 8th)
    assert day_batches(tmp_path, span, max_rows=10) == [
        date(2026, 1, 3),
        date(2026, 1, 5),
        date(2026, 1, 6),
    ]
    # a day over the budget is a batch of its own; a budget above every row: one batch
    assert day_batches(tmp_path, span, max_rows=5) == [date(2026, 1, d) for d in range(3, 8)]
    assert day_batches(tmp_path, span, max_rows=100) == [date(2026, 1, 3)]
    # a re-run of an earlier range: the batches still reach the last accounted day
    assert day_batches(tmp_path, DaySpan(date(2026, 1, 1), date(2026, 1, 1)), max_rows=10) == [
        date(2026, 1, 1),
        date(2026, 1, 5),
        date(2026, 1, 6),
    ]


def test_a_landed_file_without_a_parquet_footer_is_named(tmp_path: Path) -> None:
    span = DaySpan(date(2026, 1, 3), date(2026, 1, 3))
    folder = tmp_path / "raw" / "dcgm_samples" / "dc-a" / "date=2026-01-03"
    folder.mkdir(parents=True)
    (folder / "part-0.parquet").write_text("not parquet")
    with pytest.raises(IngestError, match=r"date=2026-01-03/part-0\.parquet: cannot read"):
        day_batches(tmp_path, span)
