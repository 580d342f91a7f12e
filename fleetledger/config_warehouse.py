"""`warehouse:` in fleetledger.yml: the DuckDB memory limit and threads of the build.

    warehouse:
      memory_limit: 4GB     # DuckDB's memory_limit: a size (KB, MB, GB, TB, KiB ... TiB) or a
                            # share of the machine's memory ("50%"); default 80%
      threads: 2            # DuckDB's worker threads; default: one a CPU

They reach the dbt build (dbt_project/profiles.yml reads them from the environment the build
step sets) and every DuckDB connection ingest opens (ingest/core/duckdb_settings.py).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager

from pydantic import BaseModel, ConfigDict, Field, field_validator

from ingest.core.duckdb_settings import MEMORY_LIMIT_ENV, THREADS_ENV

DEFAULT_MEMORY_LIMIT = "80%"
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT]i?B|B)\s*$", re.IGNORECASE)
_SHARE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


class WarehouseSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    memory_limit: str = DEFAULT_MEMORY_LIMIT
    # unset: one thread a CPU of the machine the run is on
    threads: int | None = Field(default=None, ge=1)

    @field_validator("memory_limit", mode="before")
    @classmethod
    def _memory(cls, value: object) -> str:
        text = str(value)
        size = _SIZE.match(text)
        if size and float(size.group(1)) > 0:
            return f"{size.group(1)}{size.group(2).upper().replace('IB', 'iB')}"
        share = _SHARE.match(text)
        if share and 0 < float(share.group(1)) <= 100:
            return f"{share.group(1)}%"
        raise ValueError(
            f"{text!r} is not a memory size: write a number and a unit (e.g. 4GB, 512MiB) or a "
            "share of the machine's memory (1%-100%, e.g. 50%)"
        )

    def resolved_threads(self) -> int:
        return self.threads or os.cpu_count() or 1

    def env(self) -> dict[str, str]:
        """The environment variables that carry the settings to dbt and to ingest."""
        return {MEMORY_LIMIT_ENV: self.memory_limit, THREADS_ENV: str(self.resolved_threads())}


@contextmanager
def warehouse_env(settings: WarehouseSettings) -> Iterator[None]:
    """Set the settings' environment variables for the duration, then restore the old ones."""
    values = settings.env()
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
