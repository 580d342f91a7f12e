"""Small helpers for tests that read a warehouse: rows as dicts, ISO times as epoch seconds."""

from __future__ import annotations

from datetime import datetime

import duckdb


def rows(con: duckdb.DuckDBPyConnection, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def epoch(iso: str) -> float:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()
