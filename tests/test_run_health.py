"""Issue 11, findings 10 and 12 without a warehouse: what the console shows of a run's
findings, the exit status they give, and the run lock on $FLEETLEDGER_HOME."""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import textwrap
import time
from datetime import date
from pathlib import Path

import pytest
from rich.console import Console

from fleetledger import cli
from fleetledger.data_health import Finding, summary
from fleetledger.run_lock import HomeLocked, home_lock, read_holder

D = date(2026, 10, 2)
LOST = Finding("onprem-slurm", D, "quarantined", "data_loss", 2, "2 rows quarantined: bad End")
GAP = Finding("onprem-dcgm", D, "telemetry_gap:dgx-04", "warning", 352, "dgx-04: 0.1 GPU-hours")
GAP2 = Finding("onprem-dcgm", D, "telemetry_gap:dgx-03", "warning", 48, "dgx-03: 0.0 GPU-hours")
INFO = Finding("aws-cur", None, "bill_lines_without_node:aws", "info", 50, "50 aws bill lines")
ALERT = Finding("alerts", None, "alert_delivery:slack", "data_loss", 1, "slack said 500")
ERROR = Finding("aws-cur", None, "source_unreadable", "error", 1, "no files match")


@pytest.fixture
def consoles(monkeypatch: pytest.MonkeyPatch) -> tuple[Console, Console]:
    out, err = Console(record=True, width=200), Console(record=True, width=200)
    monkeypatch.setattr(cli, "out", out)
    monkeypatch.setattr(cli, "err", err)
    return out, err


def test_summary_counts_per_source_severity_and_check() -> None:
    """The two gaps of onprem-dcgm are one row: 2 findings, 352 + 48 = 400 GPU-seconds;
    gravest first."""
    rows = [(r.source, r.severity, r.check, r.findings, r.count) for r in summary(
        [INFO, GAP, LOST, GAP2]
    )]  # fmt: skip
    assert rows == [
        ("onprem-slurm", "data_loss", "quarantined", 1, 2),
        ("onprem-dcgm", "warning", "telemetry_gap", 2, 400),
        ("aws-cur", "info", "bill_lines_without_node", 1, 50),
    ]


def test_console_shows_every_finding(consoles: tuple[Console, Console]) -> None:
    out, err = consoles
    cli._print_data_health([INFO, GAP, LOST, GAP2])
    table = out.export_text()
    assert re.search(r"onprem-slurm\s*│\s*data_loss\s*│\s*quarantined\s*│\s*1\s*│\s*2\s*│", table)
    assert re.search(r"onprem-dcgm\s*│\s*warning\s*│\s*telemetry_gap\s*│\s*2\s*│\s*400\s*│", table)
    assert "data health: [aws-cur] 50 aws bill lines" in table  # info: stdout, quieter
    lines = err.export_text()
    assert "data_loss: [onprem-slurm 2026-10-02] 2 rows quarantined: bad End" in lines
    assert "warning: [onprem-dcgm 2026-10-02] dgx-04: 0.1 GPU-hours" in lines
    assert "warning: [onprem-dcgm 2026-10-02] dgx-03: 0.0 GPU-hours" in lines


def test_exit_status(consoles: tuple[Console, Console]) -> None:
    """data_loss → 3 unless accepted, naming the finding and the flag; alert delivery never
    counts; error → 1 whatever is accepted; warnings and info → 0."""
    _, err = consoles
    assert cli.exit_status([GAP, INFO], accept_warnings=False) == cli.EXIT_OK
    assert cli.exit_status([GAP, LOST], accept_warnings=False) == cli.EXIT_DATA_LOSS == 3
    text = err.export_text(clear=True)
    assert "onprem-slurm: quarantined" in text and "--accept-warnings" in text
    assert cli.exit_status([GAP, LOST], accept_warnings=True) == 0
    assert "accepted 1 data_loss findings (onprem-slurm: quarantined)" in err.export_text()
    assert cli.exit_status([ALERT, INFO], accept_warnings=False) == 0
    assert cli.exit_status([ERROR, LOST], accept_warnings=True) == cli.EXIT_ERROR == 1


def test_run_accepts_the_flags() -> None:
    args = cli.build_parser().parse_args(
        ["run", "--date", "2026-10-02", "--accept-warnings", "--lock-timeout", "30"]
    )
    assert (args.accept_warnings, args.lock_timeout) == (True, 30.0)
    assert cli.build_parser().parse_args(["run"]).lock_timeout == 0.0


_HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from fleetledger.run_lock import home_lock
    with home_lock(Path(sys.argv[1])):
        print("locked", flush=True)
        time.sleep(float(sys.argv[2]))
    """
)


def _hold(home: Path, seconds: float) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(home), str(seconds)],
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])},
    )
    assert proc.stdout is not None and proc.stdout.readline().strip() == "locked"
    return proc


def test_second_run_is_refused_while_a_run_holds_the_home(
    two_day_fleet: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Finding 12: another process holds the home's lock; `fleetledger run` exits with 75 at
    once, naming the holder's pid and host and how to wait."""
    holder = _hold(two_day_fleet, 60)
    try:
        t0 = time.monotonic()
        code = cli.main(["run", "--date", "2026-10-02", "--home", str(two_day_fleet)])
        assert code == cli.EXIT_LOCKED == 75
        assert time.monotonic() - t0 < 30  # refused before Dagster and dbt load
        err = capsys.readouterr().err
        assert f"pid {holder.pid} on host {socket.gethostname()}" in err
        assert "is in use by another fleetledger run" in err and "--lock-timeout" in err
        assert read_holder(two_day_fleet)["pid"] == holder.pid
    finally:
        holder.kill()
        holder.wait()


def test_lock_waits_for_the_holder(tmp_path: Path) -> None:
    """A second run with a timeout waits; the lock of a killed holder is released."""
    holder = _hold(tmp_path, 1.5)
    t0 = time.monotonic()
    with home_lock(tmp_path, timeout=60):
        waited = time.monotonic() - t0
        assert read_holder(tmp_path)["pid"] == os.getpid()
        with home_lock(tmp_path):  # re-entrant in the holding process
            pass
    assert 0.5 < waited < 60
    holder.wait()
    holder = _hold(tmp_path, 60)
    with pytest.raises(HomeLocked):
        with home_lock(tmp_path, timeout=0.3):
            pass
    holder.kill()
    holder.wait()
    with home_lock(tmp_path, timeout=5):
        pass
