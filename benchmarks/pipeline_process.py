"""One pipeline run in a process of its own, as a scheduled daily run is (`fleetledger run`
from cron, or a run Dagster launches): `python -m benchmarks.pipeline_process HOME FIRST LAST`
runs `run_pipeline` over FIRST..LAST and prints its run id and full-refresh reason as one JSON
line. The daily stage (benchmarks/daily_stage.py) times its runs this way, so a daily run does
not share a process with the history build before it."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

from fleetledger.pipeline import run_pipeline


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    full_refresh: str | None


def run_in_process(home: Path, first: date, last: date) -> RunOutcome:
    """Run the pipeline over first..last in a child process; PipelineError's text when it
    fails (the child's standard error)."""
    cmd = [sys.executable, "-m", "benchmarks.pipeline_process", str(home), str(first), str(last)]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(
            f"the pipeline run over {first}..{last} in {home} failed "
            f"(exit {done.returncode}): {done.stderr.strip()[-2000:]}"
        )
    out = json.loads(done.stdout.strip().splitlines()[-1])
    return RunOutcome(run_id=out["run_id"], full_refresh=out["full_refresh"])


def main(argv: list[str]) -> int:
    home, first, last = Path(argv[0]), date.fromisoformat(argv[1]), date.fromisoformat(argv[2])
    result = run_pipeline(home, first, last)
    print(json.dumps({"run_id": result.run_id, "full_refresh": result.full_refresh}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
