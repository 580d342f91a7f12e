"""Source readers and the raw landing zone (pure Python; no Dagster imports).

Each reader is usable on its own (e.g. from a notebook) and returns polars frames: the good rows
in the shape of a landing table (docs/landing.md) and a quarantine frame of rejected rows.
`ingest.registry.ingest_source` reads a configured source and lands it.
"""

from ingest.core.common import ReadResult
from ingest.core.errors import IngestError

__all__ = ["IngestError", "ReadResult"]
