"""The Arrow types of landing columns, and the lineage columns every landing table carries."""

from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")
STR = pa.string()
F64 = pa.float64()
I64 = pa.int64()

LINEAGE: list[tuple[str, pa.DataType]] = [
    ("x_source", STR),
    ("x_source_file", STR),
    ("x_line_number", I64),
]
