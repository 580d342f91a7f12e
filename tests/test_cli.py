"""`fleetledger` command line: argument handling, exit status and messages."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from fleetledger.cli import build_parser, main
from fleetledger.config import load_config


def fleetledger(*args: str, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ}
    if home is not None:
        env["FLEETLEDGER_HOME"] = str(home)
    return subprocess.run(
        [sys.executable, "-m", "fleetledger.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=900,
    )


def test_parser_knows_every_command() -> None:
    parser = build_parser()
    args = parser.parse_args(["run", "--start", "2026-10-02", "--end", "2026-10-04"])
    assert (str(args.start), str(args.end)) == ("2026-10-02", "2026-10-04")
    args = parser.parse_args(["run", "--date", "2026-10-02", "--source", "a", "--source", "b"])
    assert args.source == ["a", "b"]
    args = parser.parse_args(["generate", "--out", "x", "--days", "3", "--seed", "1"])
    assert (args.days, args.seed, args.scrape_interval) == (3, 1, 60)
    assert parser.parse_args(["demo"]).days == 30
    with pytest.raises(SystemExit):
        parser.parse_args(["run", "--date", "yesterday"])
    with pytest.raises(SystemExit):
        parser.parse_args(["generate", "--out", "x", "--days", "0"])


def test_run_rejects_date_with_range(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--date", "2026-10-02", "--start", "2026-10-01", "--end", "2026-10-02"])
    assert "either --date" in capsys.readouterr().err


def test_alerts_without_a_published_warehouse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fleetledger.yml").write_text("reporting_currency: USD\n")
    assert main(["alerts", "--dry-run", "--home", str(tmp_path)]) == 1
    assert "warehouse.duckdb does not exist" in capsys.readouterr().err


def test_run_without_config(tmp_path: Path) -> None:
    proc = fleetledger("run", "--date", "2026-10-02", home=tmp_path)
    assert proc.returncode != 0
    assert "fleetledger.yml" in proc.stderr and "no config file" in proc.stderr


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ("idle_threshold: 0.05", "idle_threshold: 7", "idle_threshold"),
        ("kind: power", "kind: powr", "sources[{power}].kind"),
    ],
)
def test_run_broken_config_names_the_key(
    two_day_fleet: Path, tmp_path: Path, old: str, new: str, key: str
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    text = (two_day_fleet / "fleetledger.yml").read_text()
    assert old in text
    kinds = [s.kind for s in load_config(two_day_fleet / "fleetledger.yml").sources]
    key = key.format(power=kinds.index("power"))
    (home / "fleetledger.yml").write_text(text.replace(old, new))
    (home / "sources").symlink_to(two_day_fleet / "sources")
    proc = fleetledger("run", "--date", "2026-10-02", home=home)
    assert proc.returncode != 0
    assert key in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_unknown_source(two_day_fleet: Path) -> None:
    proc = fleetledger("run", "--date", "2026-10-02", "--source", "nope", home=two_day_fleet)
    assert proc.returncode != 0
    assert "'nope'" in proc.stderr


def test_run_succeeds(pipeline_home: Path, tmp_path: Path) -> None:
    """Re-ingest one feed for one day on a built home: exit 0, warehouse republished."""
    home = tmp_path / "home"
    shutil.copytree(pipeline_home, home, symlinks=True)
    published = home / "warehouse.duckdb"
    before = published.stat().st_mtime_ns
    proc = fleetledger("run", "--date", "2026-10-03", "--source", "onprem-power", home=home)
    assert proc.returncode == 0, proc.stderr
    assert "published" in proc.stdout
    assert "onprem-power" in proc.stdout
    assert published.stat().st_mtime_ns > before
    # the run summary says what data health found: the on-prem exporter's late first scrape on
    # day 1 (dgx-04's GPUs unobserved 44 s each, 352 GPU-seconds: a telemetry gap, not
    # downtime) as a warning, bill lines without a node as information
    assert "[onprem-dcgm 2026-10-02] dgx-04: 0.1 GPU-hours no sample covers" in proc.stderr
    assert "data health: [aws-cur] 75 aws bill lines" in proc.stdout
    # the findings of the earlier run are kept beside this run's
    logs = list((home / "raw/data_health_log/pipeline").glob("*/*.parquet"))
    assert len(logs) == 2
    con = duckdb.connect(str(published), read_only=True)
    try:
        runs = con.execute("select count(distinct run_id) from fct_data_health").fetchone()[0]
    finally:
        con.close()
    assert runs == 2


def test_headlines_show_the_marts_figures(pipeline_home: Path, ground_truth: dict) -> None:
    """The demo's headline tables print the ground truth's totals (rounded as printed)."""
    from rich.console import Console

    from fleetledger.cli import print_headlines

    console = Console(record=True, width=200)
    print_headlines(pipeline_home / "warehouse.duckdb", console)
    text = console.export_text()
    total = sum(t["effective_cost"] for t in ground_truth["bill_totals"].values())
    assert f"${total:,.2f}" in text
    failed = [r for r in ground_truth["runs"] if r["failure_class"]]
    checkpointed = sum(1 for r in failed if r["last_checkpoint_at"])
    assert f"failed runs ({checkpointed} with a checkpoint in their logs)" in text
    assert f"${sum(r['cost'] for r in failed):,.2f}" in text
    assert f"${sum(r['lost_work_cost'] for r in failed):,.2f}" in text
    downtime = sum(h["downtime_seconds"] for h in ground_truth["health_by_day_host"]) / 3600
    assert f"{downtime:,.1f} h" in text
    stragglers = len({s["gpu_uuid"] for s in ground_truth["stragglers"]})
    assert re.search(rf"straggler GPUs\s*│\s*{stragglers}\s*│", text), text
