"""Great Expectations, imported and set up once per process for the landing suites' GX route
(ingest/core/quality.py).

Importing Great Expectations takes about 2.7 s of one CPU, and every run validates some small
partition with it (a CUR export, the sacct lines), so a run pays it once: `prewarm` imports it
on a background thread at the start of a run (fleetledger/pipeline.py), while the run ingests,
instead of on the landing checks' path. `gx()` is safe to call from any thread; it returns the
same objects to all.
"""

from __future__ import annotations

import threading
from functools import cache
from typing import Any

_lock = threading.Lock()
_loaded: tuple[Any, Any, Any] | None = None


def gx() -> tuple[Any, Any, Any]:
    """(great_expectations, the expectations module, an ephemeral context without progress
    bars), imported and built once per process."""
    global _loaded
    with _lock:
        if _loaded is None:
            import great_expectations
            import great_expectations.expectations as gxe
            from great_expectations.data_context.types.base import ProgressBarsConfig

            context = great_expectations.get_context(mode="ephemeral")
            context.variables.progress_bars = ProgressBarsConfig(
                globally=False, metric_calculations=False
            )
            _loaded = (great_expectations, gxe, context)
        return _loaded


def prewarm() -> threading.Thread:
    """Import and set up Great Expectations on a background (daemon) thread; the first
    validation then finds it ready, or waits for the import to finish."""
    thread = threading.Thread(target=_prewarm, name="gx-import", daemon=True)
    thread.start()
    return thread


def _prewarm() -> None:
    try:
        gx()
    except Exception:  # the validation that needs it imports again and reports the error
        pass


@cache
def datasource() -> Any:
    """The pandas data source every landing table is an asset of (one per process)."""
    _, _, context = gx()
    return context.data_sources.add_pandas("fleetledger_landing")


@cache
def batch_definition(table: str) -> Any:
    """A whole-dataframe batch definition of the table's asset (created once per process)."""
    asset = datasource().add_dataframe_asset(table)
    return asset.add_batch_definition_whole_dataframe("whole")
