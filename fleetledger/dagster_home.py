"""The Dagster instance `fleetledger run` records its runs in: `$FLEETLEDGER_HOME/dagster/`.

Runs, materialisations over partitions, asset check results and the ingest metadata are kept
in sqlite files there (Dagster's default storage for an instance directory: `storage/`,
`history/`, `schedules/`), so `DAGSTER_HOME=$FLEETLEDGER_HOME/dagster dagster dev` shows what
the command line did. A `DAGSTER_HOME` set in the environment wins (an operator's own instance).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from fleetledger import yaml_text

DAGSTER_DIR = "dagster"
_CONFIG = """\
# The Dagster instance of this FLEETLEDGER_HOME (written by fleetledger; see docs/operations.md).
# Runs, events, materialisations and check results are kept in sqlite files beside this one
# (Dagster's default storage: storage/, history/, schedules/). Start the UI on it with
#   DAGSTER_HOME=<this folder> dagster dev
telemetry:
  enabled: false
"""


def dagster_home(home: Path) -> Path:
    """`$FLEETLEDGER_HOME/dagster`: the instance directory (DAGSTER_HOME) of a home."""
    return Path(home).resolve() / DAGSTER_DIR


def ensure_dagster_home(home: Path) -> Path:
    """Create the instance directory and its dagster.yaml (an existing one is kept)."""
    path = dagster_home(home)
    path.mkdir(parents=True, exist_ok=True)
    config = path / "dagster.yaml"
    if not config.exists():
        tmp = path / f".dagster.yaml.{os.getpid()}.partial"
        tmp.write_text(_CONFIG)
        os.replace(tmp, config)
    return path


def run_instance(home: Path) -> Any:
    """The persistent DagsterInstance a run of `home` records into: `$DAGSTER_HOME` when set,
    else `$FLEETLEDGER_HOME/dagster/` (created on first use). Dispose of it after the run."""
    from dagster import DagsterInstance
    from dagster._core.instance.ref import InstanceRef

    if os.environ.get("DAGSTER_HOME"):
        return DagsterInstance.get()
    path = ensure_dagster_home(home)
    config = yaml_text.safe_load((path / "dagster.yaml").read_text()) or {}
    if any(key in config for key in ("storage", "event_log_storage")):
        return DagsterInstance.from_config(str(path))  # the operator's own storage
    # Dagster's default sqlite files, written through one connection per file
    # (fleetledger/dagster_storage.py); the UI reads the same files with its default storage
    overrides = {
        "event_log_storage": {
            "module": "fleetledger.dagster_storage",
            "class": "PooledSqliteEventLogStorage",
            "config": {"base_dir": str(path / "history" / "runs")},
        }
    }
    return DagsterInstance.from_ref(InstanceRef.from_dir(str(path), overrides=overrides))
